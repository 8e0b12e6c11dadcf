"""Names of zip entries and of uploads, as a user sees them: a file's `fileName`, its `originalFile` download's name,
a batch's failure reason. Zips are written here byte by byte where zipfile would not write them so (a UTF-8 name
without the UTF-8 flag, a flagged name that is not UTF-8), as other tools do."""

import io
import json
import struct
import zipfile
import zlib
from urllib.parse import quote

import pytest

from conversion.models import UNABLE_TO_READ

from .conftest import FILES_URL, file_record, uploaded_batch, zip_entries

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

UTF8_FLAG = 0x800
POINTS = json.dumps(
    {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": [10.0 + i * 1e-4, 54.0]},
                "properties": {"timestamp": f"2024-05-01T10:00:{i:02d}Z", "appliedRate": 100.0},
            }
            for i in range(5)
        ],
    }
).encode()


def _raw_zip(entries: dict[bytes, bytes], *, flags: int = 0, extra: bytes = b"") -> bytes:
    """A zip whose entries are named with exactly the bytes given, with the general purpose `flags` (bit 11: the
    name is UTF-8) and the `extra` field, whatever zipfile would have written."""
    buffer = io.BytesIO()
    placeholders = {}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, (name, data) in enumerate(entries.items()):
            placeholder = (f"{n}~" * len(name))[: len(name)].encode()
            placeholders[placeholder] = name
            info = zipfile.ZipInfo(placeholder.decode(), date_time=(2024, 5, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.extra = extra
            zf.writestr(info, data)
    data = bytearray(buffer.getvalue())
    for placeholder, name in placeholders.items():
        data = bytearray(data.replace(placeholder, name))
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (start := data.find(signature, start)) >= 0:
            struct.pack_into("<H", data, start + flags_at, struct.unpack_from("<H", data, start + flags_at)[0] | flags)
            start += 4
    return bytes(data)


def _unicode_path(header_name: bytes, name: str) -> bytes:
    """Info-ZIP's Unicode Path extra field (0x7075): version 1, the CRC32 of `header_name`, `name` in UTF-8."""
    data = struct.pack("<BL", 1, zlib.crc32(header_name)) + name.encode()
    return struct.pack("<HH", 0x7075, len(data)) + data


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_raw_zip({"Maïs Ähre 🌽.geojson".encode(): POINTS}), "Maïs Ähre 🌽"),  # UTF-8 without the flag
        (zip_entries({"Maïs Ähre 🌽.geojson": POINTS}), "Maïs Ähre 🌽"),  # UTF-8 with the flag (zipfile's)
        (_raw_zip({"Maïs Ähre.geojson".encode("cp437"): POINTS}), "Maïs Ähre"),  # CP437: no UTF-8
        (_raw_zip({b"Ma?s.geojson": POINTS}, extra=_unicode_path(b"Ma?s.geojson", "Maïs.geojson")), "Maïs"),
        (_raw_zip({b"Ma?s.geojson": POINTS}, extra=_unicode_path(b"Renamed.geojson", "Maïs.geojson")), "Ma?s"),
    ],
    ids=["utf8-unflagged", "utf8-flagged", "cp437", "unicode-path-field", "unicode-path-field-of-another-name"],
)
def test_an_entry_is_named_as_its_writer_meant_it(api_client, core_user, data, expected):
    """A UTF-8 name without the UTF-8 flag was read as CP437 ("Maïs Ähre 🌽" showed as "Ma├»s ├ähre ≡ƒî╜"); the
    Unicode Path extra field was not read ("Ma?s" stayed), and is not when its CRC is of another name."""
    batch = uploaded_batch(api_client, core_user, data)
    assert batch["status"] == "PROCESSED", batch
    file = file_record(api_client, batch["files"][0])
    assert file["fileName"] == expected
    response = api_client.get(f"{FILES_URL}/{file['id']}/originalFile")
    assert response.status_code == 200
    assert response["Content-Disposition"] in (
        f'attachment; filename="{expected}.zip"',
        f"attachment; filename*=utf-8''{quote(expected + '.zip')}",
    )


def test_a_name_flagged_utf8_that_is_not_fails_the_upload_naming_it(api_client, core_user):
    """zipfile gives up on the whole archive at such a name (even a junk one); the reason was its codec error,
    "upload.zip cannot be opened as a zip archive ('utf-8' codec can't decode byte 0xff ...)"."""
    data = _raw_zip({b"__MACOSX/\xff\xfe.txt": b"x", b"spray.geojson": POINTS}, flags=UTF8_FLAG)
    batch = uploaded_batch(api_client, core_user, data)
    assert (batch["status"], batch["statusDetails"]) == ("FAILED", UNABLE_TO_READ)
    assert batch["failureReason"] == (
        "upload.zip cannot be read: the name of its entry '__MACOSX/\\xff\\xfe.txt' is marked as UTF-8 but is not "
        "UTF-8 (a fault of the tool that made the zip); zip the files again with another tool"
    )


@pytest.fixture
def single_task(load_from_stream) -> dict[str, bytes]:
    with zipfile.ZipFile(load_from_stream / "SingleDPD.zip") as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def test_control_characters_are_no_part_of_an_entry_name(api_client, core_user, single_task):
    """They were kept in `fileName` (and so on the magic link's status page) of a file, a task data set's folder and a
    proprietary folder: NUL, the other C0 controls and lone surrogates go, as from any text from outside
    (`platform_site.text.storable`)."""
    entries = {b"Ma\x01\x1fs.geojson": POINTS, b"Farm\x07.cn1/index.vy1": b"CNH display data"}
    entries |= {b"Feld\x07 1/" + name.encode(): data for name, data in single_task.items()}
    batch = uploaded_batch(api_client, core_user, _raw_zip(entries))
    assert batch["status"] == "PROCESSED", batch
    names = sorted(file_record(api_client, file_id)["fileName"] for file_id in batch["files"])
    assert names == ["Farm.cn1", "Feld 1", "Mas"]


@pytest.mark.parametrize("upload_name", ["..zip", "...ZIP"])
def test_a_task_data_set_at_the_top_of_an_upload_named_only_dots_is_taskdata(
    api_client, core_user, single_task, upload_name
):
    """`..zip` named it "." (the name without .zip); only dots leave no name, as an empty one does."""
    batch = uploaded_batch(api_client, core_user, zip_entries(single_task), name=upload_name)
    assert batch["status"] == "PROCESSED", batch
    assert [file_record(api_client, file_id)["fileName"] for file_id in batch["files"]] == ["TASKDATA"]
