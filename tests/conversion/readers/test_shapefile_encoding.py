"""DBF text in the code page the data set's .cpg declares, else UTF-8 when it all is, else in the code page of the DBF
header's language driver, else Windows-1252: on John Deere's application export with its product name rewritten as
other exporters write it. Its JD metadata sidecar in UTF-8, UTF-16 or UTF-32, else Windows-1252."""

import codecs
import json
from pathlib import Path

import numpy as np
import pytest

from conversion.readers import Dataset, get_reader
from tests.conversion.readers.sample_variants import copy_shapefile_set, set_dbf_text

pytestmark = pytest.mark.embedded

APPLICATION = "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Application.zip"
SMALL_SET = "Merriweather Farms-JT-01-SB 2 PowerMax only Use 1"
PRODUCT = "Düngerstreuer"
NO_DRIVER = 0x00  # what the byte holds when the writer declares no code page (pyshp, many scripts)


@pytest.fixture
def application(extracted) -> Path:
    [folder] = {shp.parent for shp in extracted(APPLICATION).rglob("*.shp")}
    return folder


def _variant(application: Path, tmp_path: Path, text: bytes, *, cpg: bytes | None, driver: int) -> Path:
    shp = copy_shapefile_set(application, SMALL_SET, tmp_path)
    set_dbf_text(shp.with_suffix(".dbf"), "Product", text, language_driver=driver)
    if cpg is not None:
        shp.with_suffix(".cpg").write_bytes(cpg)
    return shp


def _read(shp: Path):
    [table] = get_reader("SHAPEFILE").read(Dataset("SHAPEFILE", shp, shp.parent, shp.stem))
    return table


def _assert_product_read(table, product: str) -> None:
    assert len(table) > 0
    assert (table.columns["products"] == product).all()
    assert (table.raw_columns["Product"] == product).all()
    assert product in table.products


@pytest.mark.parametrize(
    ("codec", "cpg", "driver"),
    [
        ("latin-1", b"ISO-8859-1", NO_DRIVER),
        ("latin-1", b"ISO 88591\r\n", NO_DRIVER),
        ("latin-1", b"88591", 0x58),  # the .cpg before the header's driver
        ("cp1252", b"1252", NO_DRIVER),
        ("cp1252", b"ANSI 1252", NO_DRIVER),
        ("cp1252", b"windows-1252", NO_DRIVER),
        ("cp850", b"850", 0x57),
        ("utf-8", b"UTF-8", 0x58),  # JD's own header byte (Western European ANSI), overruled by the .cpg
        ("utf-8", b"\xef\xbb\xbfUTF-8\n", NO_DRIVER),
    ],
)
def test_text_is_read_in_the_code_page_of_the_cpg(application, tmp_path, codec, cpg, driver):
    # Given the export with its product name written in `codec` and a .cpg saying so
    shp = _variant(application, tmp_path, PRODUCT.encode(codec), cpg=cpg, driver=driver)
    # Then the name reads as written
    table = _read(shp)
    _assert_product_read(table, PRODUCT)
    assert table.warnings == _read(copy_shapefile_set(application, SMALL_SET, tmp_path / "original")).warnings


@pytest.mark.parametrize(("cpg", "driver", "read_as"), [(b"UTF-8", 0x57, "cp1252"), (b"UTF-8", 0x02, "cp850")])
def test_text_not_valid_in_the_code_page_of_the_cpg_is_read_as_without_a_cpg_and_said(
    application, tmp_path, cpg, driver, read_as
):
    """A .cpg saying UTF-8 beside Windows-1252 text (a tool rewrote one of them): the names were "D\ufffdngerstreuer",
    unsaid, in the summary and the catalog."""
    product = "Säure Plüs"
    shp = _variant(application, tmp_path, product.encode(read_as), cpg=cpg, driver=driver)
    table = _read(shp)
    _assert_product_read(table, product)
    rows = len(table.raw_columns["Product"])
    texts = sum(1 for c in table.raw_columns.values() if c.dtype == object) * rows + len(table.raw_columns)
    assert table.warnings[0] == (
        f"{shp.stem}.cpg: {rows} of {texts} text values and column names are not valid utf-8, the code page it names; "
        f"the text is read as {read_as}, as without a .cpg"
    )


@pytest.mark.parametrize(
    ("codec", "driver"),
    [("cp1252", 0x57), ("cp1252", 0x58), ("cp1252", 0x03), ("cp437", 0x01), ("cp850", 0x02), ("cp1250", 0xC8)],
)
def test_without_a_cpg_text_is_read_in_the_code_page_of_the_language_driver(application, tmp_path, codec, driver):
    shp = _variant(application, tmp_path, PRODUCT.encode(codec), cpg=None, driver=driver)
    _assert_product_read(_read(shp), PRODUCT)


@pytest.mark.parametrize("driver", [0x58, 0x57, 0x01, 0xC9])
def test_without_a_cpg_text_that_is_all_utf8_is_read_as_utf8_whatever_the_language_driver_says(
    application, tmp_path, driver
):
    """Writers set the byte to their default whatever they write (John Deere's say Windows-1252): UTF-8 text read
    as Windows-1252 became `DÃ¼ngerstreuer`; Windows-1252 text is almost never valid UTF-8."""
    shp = _variant(application, tmp_path, PRODUCT.encode("utf-8"), cpg=None, driver=driver)
    _assert_product_read(_read(shp), PRODUCT)


@pytest.mark.parametrize("codec", ["utf-8", "cp1252"])
def test_undeclared_text_is_utf8_when_it_is_else_windows_1252(application, tmp_path, codec):
    # Given no .cpg and no language driver: the text itself decides
    shp = _variant(application, tmp_path, "Dünger – 5 €".encode(codec), cpg=None, driver=NO_DRIVER)
    _assert_product_read(_read(shp), "Dünger – 5 €")


def test_undeclared_utf8_cut_by_the_field_width_stays_utf8(application, tmp_path):
    # Given a UTF-8 name that an exporter cut inside its last character to fit the 23-byte field
    name = "Düngerstreuer Ölrettü".encode()
    assert len(name) == 24
    shp = copy_shapefile_set(application, SMALL_SET, tmp_path)
    set_dbf_text(shp.with_suffix(".dbf"), "Product", name[:23], language_driver=NO_DRIVER)
    table = _read(shp)
    # Then the file is still read as UTF-8: every whole character is right
    assert all(p.startswith("Düngerstreuer Ölrett") for p in table.columns["products"])


def test_a_cpg_naming_no_known_code_page_is_passed_over_with_a_warning(application, tmp_path):
    shp = _variant(application, tmp_path, PRODUCT.encode("cp1252"), cpg=b"KLINGON-42", driver=0x57)
    table = _read(shp)
    _assert_product_read(table, PRODUCT)
    assert any(".cpg: code page 'KLINGON-42' not known" in w for w in table.warnings), table.warnings


@pytest.mark.parametrize("cpg", [b"punycode", b"utf-16", b"UTF-7", b"unicode_escape", b"zlib", b"hz"])
def test_a_cpg_naming_a_codec_that_is_no_dbf_code_page_is_passed_over_with_a_warning(application, tmp_path, cpg):
    """Python decodes these, but no DBF text is written in them: punycode crashed the worker even with
    errors="replace" ("Leaf internal error"), UTF-16 read every name as CJK characters."""
    shp = _variant(application, tmp_path, PRODUCT.encode("cp1252"), cpg=cpg, driver=0x57)
    table = _read(shp)
    _assert_product_read(table, PRODUCT)
    assert any(f".cpg: code page {cpg.decode()!r} not known" in w for w in table.warnings), table.warnings


@pytest.mark.parametrize(("codec", "cpg"), [("shift_jis", b"Shift_JIS"), ("cp932", b"932"), ("gbk", b"GBK")])
def test_a_cpg_naming_an_east_asian_multibyte_code_page_is_read(application, tmp_path, codec, cpg):
    shp = _variant(application, tmp_path, "肥料散布".encode(codec), cpg=cpg, driver=NO_DRIVER)
    _assert_product_read(_read(shp), "肥料散布")


def test_a_column_name_in_the_code_page_is_read(application, tmp_path):
    # Given a column named in Latin-1 (the header's name bytes of "Elevation" rewritten as "Höhe")
    shp = _variant(application, tmp_path, PRODUCT.encode("latin-1"), cpg=b"ISO-8859-1", driver=NO_DRIVER)
    dbf = shp.with_suffix(".dbf")
    data = dbf.read_bytes()
    at = data.index(b"Elevation\0")
    dbf.write_bytes(data[:at] + "Höhe".encode("latin-1").ljust(10, b"\0") + data[at + 10 :])
    table = _read(shp)
    original = _read(copy_shapefile_set(application, SMALL_SET, tmp_path / "original"))
    np.testing.assert_array_equal(table.raw_columns["Höhe"], original.raw_columns["Elevation"])


@pytest.mark.parametrize("cpg", [b"28592", b"ISO-8859-2"])
def test_windows_numbers_of_the_iso_8859_code_pages_are_those_pages(application, tmp_path, cpg):
    """28592 is Windows' number for ISO-8859-2 (Central European): its "ł" is "³" in ISO-8859-1."""
    product = "Nawóz płynny"
    shp = _variant(application, tmp_path, product.encode("iso8859-2"), cpg=cpg, driver=NO_DRIVER)
    _assert_product_read(_read(shp), product)


def _metadata_rewritten(application: Path, tmp_path: Path, write) -> Path:
    """The export with its JD metadata sidecar's first component renamed "Säure Plüs" and the sidecar written with
    `write(text)` (bytes); its .shp."""
    shp = copy_shapefile_set(application, SMALL_SET, tmp_path)
    sidecar = shp.with_name(f"{SMALL_SET}-Deere-Metadata.json")
    metadata = json.loads(sidecar.read_text(encoding="utf-8"))
    metadata["Product"]["Components"][0]["Name"] = "Säure Plüs"
    sidecar.write_bytes(write(json.dumps(metadata, ensure_ascii=False, indent=2)))
    return shp


@pytest.mark.parametrize(
    "write",
    [
        lambda text: text.encode("utf-16"),  # with its BOM, as Windows' "Unicode"
        lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
        lambda text: text.encode("utf-32"),
        lambda text: text.encode("cp1252"),
        lambda text: codecs.BOM_UTF8 + text.encode("utf-8"),
    ],
    ids=["utf-16", "utf-16-be", "utf-32", "windows-1252", "utf-8-bom"],
)
def test_a_deere_metadata_sidecar_in_another_encoding_gives_its_units_and_products(application, tmp_path, write):
    """A sidecar that was not UTF-8 was thrown away unsaid: appliedRate lost its gal/ac (an average of 17.4 instead of
    162.6 L/ha) and the products their names, with only "no unit in the file" warnings."""
    shp = _metadata_rewritten(application, tmp_path, write)
    table = _read(shp)
    assert table.products == ["SB 2 PowerMax only Use", "Säure Plüs", "FS MaxSupreme", "AMS"]
    assert table.source_units["appliedRate"] == "gal/ac"
    assert table.units["appliedRate"] == "L/ha"
    assert table.warnings == []


def test_a_deere_metadata_sidecar_that_cannot_be_read_is_named_in_a_warning(application, tmp_path):
    # Given a sidecar cut short
    shp = _metadata_rewritten(application, tmp_path, lambda text: text[:200].encode("utf-8"))
    table = _read(shp)
    # Then the shapefile is read as without it, and the warnings name it first
    assert table.units["appliedRate"] == "unknown"
    assert table.warnings[0].startswith(f"{SMALL_SET}-Deere-Metadata.json: not read (not JSON: "), table.warnings
    assert table.warnings[0].endswith("; the units and products it names are unknown")
