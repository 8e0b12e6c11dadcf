"""The .shx index of a shapefile, on John Deere's application export: a data set without one reads the same points
as with it; a damaged one fails the data set with the reason, and its entries are never read as coordinates."""

from pathlib import Path

import numpy as np
import pytest
import shapefile

from conversion.readers import Dataset, UnreadableDataset, get_reader
from tests.conversion.readers.sample_variants import copy_shapefile_set

pytestmark = pytest.mark.embedded

APPLICATION = "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Application.zip"
SMALL_SET = "Merriweather Farms-JT-01-SB 2 PowerMax only Use 1"


@pytest.fixture
def application(extracted) -> Path:
    """The folder of the four application shapefiles of JD's export."""
    [folder] = {shp.parent for shp in extracted(APPLICATION).rglob("*.shp")}
    return folder


def _read(shp: Path):
    [table] = get_reader("SHAPEFILE").read(Dataset("SHAPEFILE", shp, shp.parent, shp.stem))
    return table


def _record_count(shp: Path) -> int:
    with shapefile.Reader(str(shp)) as reader:
        return len(reader)


def _assert_same_table(table, expected) -> None:
    assert table.columns.keys() == expected.columns.keys()
    for name, values in expected.columns.items():
        np.testing.assert_array_equal(table.columns[name], values, err_msg=name)
    assert table.units == expected.units
    assert table.products == expected.products


def test_a_shapefile_without_its_index_reads_the_same_points(application, tmp_path):
    stems = sorted(shp.stem for shp in application.glob("*.shp"))
    assert len(stems) == 4
    for stem in stems:
        # Given each data set of the export, once whole and once without its .shx
        whole = copy_shapefile_set(application, stem, tmp_path / f"{stem} whole")
        bare = copy_shapefile_set(application, stem, tmp_path / f"{stem} bare", leave_out=(".shx",))
        assert not bare.with_suffix(".shx").exists()
        # When both are read
        expected, table = _read(whole), _read(bare)
        # Then without the index every record of the file is a point, and the same point as with it
        assert len(table) == _record_count(whole), stem
        _assert_same_table(table, expected)


def _points(path: Path, coordinates: list) -> None:
    """A point shapefile with a null shape among its points, so its records differ in length."""
    with shapefile.Writer(str(path), shapeType=shapefile.POINTZ) as writer:
        writer.field("AppliedRate", "N", 10, 2)
        for i, xyz in enumerate(coordinates):
            if xyz is None:
                writer.null()
            else:
                writer.pointz(*xyz)
            writer.record(10.0 + i)


def test_records_of_different_lengths_are_found_without_the_index(tmp_path):
    coordinates = [(-93.0, 41.0, 250.0), (-93.0001, 41.0001, 251.0), None, (-93.0002, 41.0002, 252.0)]
    (tmp_path / "whole").mkdir()
    (tmp_path / "bare").mkdir()
    _points(tmp_path / "whole" / "rate.shp", coordinates)
    _points(tmp_path / "bare" / "rate.shp", coordinates)
    (tmp_path / "bare" / "rate.shx").unlink()
    expected, table = _read(tmp_path / "whole" / "rate.shp"), _read(tmp_path / "bare" / "rate.shp")
    _assert_same_table(table, expected)
    kept = [c for c in coordinates if c is not None]
    np.testing.assert_array_equal(table.columns["lon"], [c[0] for c in kept])
    np.testing.assert_array_equal(table.columns["elevation"], [c[2] for c in kept])


def test_polygons_are_read_without_the_index(tmp_path):
    path = tmp_path / "poly.shp"
    with shapefile.Writer(str(path), shapeType=shapefile.POLYGON) as writer:
        writer.field("AppliedRate", "N", 10, 2)
        writer.poly([[(-93.0, 41.0), (-93.0, 41.0001), (-92.9999, 41.0001), (-92.9999, 41.0), (-93.0, 41.0)]])
        writer.record(20.0)
    expected = _read(path)
    path.with_suffix(".shx").unlink()
    _assert_same_table(_read(path), expected)


def _damaged_index(application: Path, tmp_path: Path, damage) -> Path:
    shp = copy_shapefile_set(application, SMALL_SET, tmp_path)
    shx = shp.with_suffix(".shx")
    shx.write_bytes(damage(bytearray(shx.read_bytes()), shp.stat().st_size))
    return shp


@pytest.mark.parametrize("cut", [1, 3, 4, 7])
def test_an_index_cut_inside_an_entry_fails_the_data_set_with_the_reason(application, tmp_path, cut):
    shp = _damaged_index(application, tmp_path, lambda shx, _size: shx[:-cut])
    with pytest.raises(UnreadableDataset, match=r"the .*\.shx index is cut short \(\d+ bytes of entries, not a whole"):
        _read(shp)


def test_an_index_cut_between_entries_fails_as_shapes_missing(application, tmp_path):
    shp = _damaged_index(application, tmp_path, lambda shx, _size: shx[:-16])
    records = _record_count(copy_shapefile_set(application, SMALL_SET, tmp_path / "whole"))
    with pytest.raises(UnreadableDataset, match=f"{records - 2} shapes but {records} attribute records"):
        _read(shp)


def _entry_offset(entry: int, words: int):
    """Damage: entry `entry` (0-based) of the index gets the record offset `words` (16-bit words)."""

    def damage(shx: bytearray, _size: int) -> bytes:
        shx[100 + 8 * entry : 104 + 8 * entry] = words.to_bytes(4, "big", signed=True)
        return bytes(shx)

    return damage


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_entry_offset(5, 0), r"entry 6 of the .*\.shx index points outside the records of the \.shp \(byte 0 of"),
        (_entry_offset(5, -100), r"entry 6 of the .*\.shx index points outside the records of the \.shp \(byte -200"),
        (_entry_offset(0, 10), r"entry 1 of the .*\.shx index points outside the records of the \.shp \(byte 20 of"),
        (_entry_offset(5, 2**30), r"entry 6 of the .*\.shx index points outside the records of the \.shp"),
        (lambda shx, size: _entry_offset(7, (size - 10) // 2)(shx, size), r"entry 8 of .* points outside the"),
        (_entry_offset(5, 50 + 2), r"entry 6 of the .*\.shx index points at no POINTZ shape of the \.shp"),
    ],
    ids=["zero", "negative", "inside-the-header", "past-the-end", "at-the-last-bytes", "inside-a-record"],
)
def test_an_index_entry_off_the_records_fails_the_data_set(application, tmp_path, damage, reason):
    # Given the export with one index entry damaged (an offset of 0 used to read the file header as a point, a
    # negative one the end of the file)
    shp = _damaged_index(application, tmp_path, damage)
    # Then the data set fails with the reason rather than read anything at that offset as coordinates
    with pytest.raises(UnreadableDataset, match=reason):
        _read(shp)
