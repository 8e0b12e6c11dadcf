"""Safe extraction of uploaded zips.

Uploads are untrusted: extraction refuses path traversal, absolute paths and symlinks, and stops a zip bomb
before it fills the disk (entry count, total size and compression ratio are checked on the declared sizes first
and again on the bytes actually written while streaming). Nested zips are extracted in place, recursively, under
the same budget.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from platform_site.api.errors import STORAGE_FULL_ERRNOS

GIB = 1024**3
CHUNK = 1024 * 1024
# Ratios are only meaningful for entries large enough to hurt; tiny highly-compressible files are common.
RATIO_MIN_BYTES = 1024 * 1024
JUNK_DIRS = frozenset({"__macosx"})
JUNK_FILES = frozenset({".ds_store", "thumbs.db", "desktop.ini"})
# Bit 11 of an entry's flags: its name is UTF-8 (APPNOTE 4.4.4, appendix D); without it, IBM code page 437.
UTF8_NAME_FLAG = 0x800
# Info-ZIP's Unicode Path extra field: version 1, the CRC32 of the header's name, the name in UTF-8.
UNICODE_PATH_FIELD = 0x7075


class ArchiveError(Exception):
    """The upload cannot be extracted safely; the message says why."""


class CorruptArchive(ArchiveError):
    """A zip that cannot be read (no zip, cut short, a corrupt directory or entry, encrypted, a feature zipfile
    lacks), as opposed to one refused as hostile (a bomb, a path outside, too deep). A zip nested in the upload that
    is corrupt is left out alone (`UNREADABLE_SUFFIX`); the upload itself, corrupt, fails whole."""


# What a nested zip that cannot be read leaves in its place: a file of this name beside where it was, holding why.
# Detection makes it a failed file of its own (`detection.UNREADABLE_ZIP`); the rest of the upload converts.
UNREADABLE_SUFFIX = ".unreadable"


# Errors of our own disk, not of the archive: a full disk (or quota: `STORAGE_FULL_ERRNOS`), a failing or read-only
# one. They are raised as they are, the caller's failure, never the upload's ("entry ... is corrupt or truncated
# ([Errno 28] No space left on device)" failed a good upload for good). The archive's own faults are zipfile's and
# zlib's errors, EOFError, and bz2's OSError without an errno.
DISK_ERRNOS = STORAGE_FULL_ERRNOS | {errno.EIO, errno.EROFS}


def disk_failure(exc: BaseException) -> bool:
    """Whether `exc` is a failure of the disk we write to or read from (`DISK_ERRNOS`), not of the archive."""
    return isinstance(exc, OSError) and exc.errno in DISK_ERRNOS


@dataclass
class ExtractionBudget:
    """Limits shared by an archive and every zip nested in it."""

    max_entries: int
    max_total_bytes: int
    max_ratio: float
    max_depth: int
    entries: int = 0
    total_bytes: int = 0

    def too_compressed(self, size: int, compressed: int) -> bool:
        """Whether `size` bytes from `compressed` expand past the ratio limit; under RATIO_MIN_BYTES never (a small
        file compresses extremely well and is harmless)."""
        return size >= RATIO_MIN_BYTES and size > self.max_ratio * max(compressed, 1)

    def add_entry(self, name: str) -> None:
        """Count one entry; fail past the entry limit."""
        self.entries += 1
        if self.entries > self.max_entries:
            raise ArchiveError(f"too many entries in the archive (more than {self.max_entries}) at {name}")

    def add_bytes(self, n: int, name: str) -> None:
        """Count written bytes; fail past the total size limit."""
        self.total_bytes += n
        if self.total_bytes > self.max_total_bytes:
            raise ArchiveError(
                f"archive expands beyond {self.max_total_bytes} bytes (stopped while extracting {name}); "
                "this looks like a zip bomb"
            )


@dataclass
class ExtractResult:
    """What extraction wrote and what it skipped."""

    files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # nested zips that cannot be read (`UNREADABLE_SUFFIX`)
    total_bytes: int = 0


def safe_extract(
    zip_path: str | os.PathLike,
    dest: str | os.PathLike,
    *,
    max_entries: int = 20_000,
    max_total_bytes: int = 20 * GIB,
    max_ratio: float = 200.0,
    max_depth: int = 3,
    name: str | None = None,
) -> ExtractResult:
    """Extract `zip_path` into `dest` safely; nested zips are extracted next to where they were, then removed.

    Raises `ArchiveError` for a non-zip or corrupt file and for anything unsafe or unusable (traversal, absolute
    path, symlink, encrypted entry, a name too long for the disk, a file and a folder of one name, too many
    entries, too large, too compressed, zips nested deeper than `max_depth`). Messages name the archive `name`
    (the uploaded file's name; by default the file name of `zip_path`). A failure of our own disk (full, failing:
    `disk_failure`) is raised as the OSError it is: it is no fault of the archive.
    """
    dest_path = Path(dest)
    dest_path.mkdir(parents=True, exist_ok=True)
    budget = ExtractionBudget(max_entries, max_total_bytes, max_ratio, max_depth)
    result = ExtractResult()
    _extract(Path(zip_path), dest_path.resolve(), budget, result, depth=0, label=name or Path(zip_path).name)
    result.total_bytes = budget.total_bytes
    return result


def _open_zip(path: Path, label: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except OSError as exc:
        # A disk that failed, or the file itself that cannot be opened (an error naming it: the stored upload gone,
        # its folder not this process's MEDIA_ROOT, no permission): ours, not the archive's. Blamed on the upload,
        # it said "Files found but unable to read" and showed the server's path of the file.
        if disk_failure(exc) or exc.filename is not None:
            raise
        raise CorruptArchive(f"{label} cannot be opened as a zip archive ({exc})") from exc
    except zipfile.BadZipFile as exc:
        raise CorruptArchive(f"{label} is not a zip archive or is truncated ({exc})") from exc
    except UnicodeDecodeError as exc:
        # zipfile reads a name flagged UTF-8 strictly while it reads the directory, and gives up on the whole archive;
        # it has no way to read names as bytes.
        shown = exc.object.decode("utf-8", "backslashreplace") if isinstance(exc.object, bytes) else "?"
        raise CorruptArchive(
            f"{label} cannot be read: the name of its entry '{shown}' is marked as UTF-8 but is not UTF-8 (a fault "
            "of the tool that made the zip); zip the files again with another tool"
        ) from exc
    except (ValueError, EOFError) as exc:
        raise CorruptArchive(f"{label} cannot be opened as a zip archive ({exc})") from exc
    except NotImplementedError as exc:  # (a directory that asks for a zip version or feature Python's zipfile lacks)
        raise CorruptArchive(f"{label} uses a zip feature that cannot be read ({exc}); zip the files again") from exc


def _extract(zip_path: Path, dest: Path, budget: ExtractionBudget, result: ExtractResult, depth: int, label: str):
    with _open_zip(zip_path, label) as zf:
        try:
            infos = zf.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            if disk_failure(exc):
                raise
            raise CorruptArchive(f"{label}: corrupt zip directory ({exc})") from exc
        planned: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
        declared = 0
        for info in infos:
            info.filename = _entry_name(info)  # (zipfile finds the entry's data by its header, not by this name)
            budget.add_entry(info.filename)
            rel = _safe_relative(info, label)
            if rel is None:
                result.skipped.append(info.filename)
                continue
            if _is_symlink(info):
                raise ArchiveError(f"{label}: entry {info.filename!r} is a symbolic link, which is not allowed")
            if info.flag_bits & 0x1:
                raise ArchiveError(
                    f"{label}: entry {info.filename!r} is encrypted (password protected); upload the files without "
                    "a password"
                )
            if info.is_dir():
                _make_folder(dest / rel, info, label)
                continue
            declared += info.file_size
            _check_ratio(info.file_size, info.compress_size, info.filename, budget, label)
            planned.append((info, rel))
        # Entries under RATIO_MIN_BYTES are not held to the ratio one by one, so the archive as a whole is: thousands of
        # small zero-filled entries expanded a 2 MB upload to 2 GB. Declared sizes bound what is written (an entry
        # writing more than it declared fails).
        archive_size = zip_path.stat().st_size
        if budget.too_compressed(declared, archive_size):
            raise ArchiveError(
                f"{label} expands {declared / max(archive_size, 1):.0f} times its size (limit "
                f"{budget.max_ratio:.0f}); this looks like a zip bomb"
            )
        if budget.total_bytes + declared > budget.max_total_bytes:
            raise ArchiveError(
                f"{label} declares {declared} bytes uncompressed, beyond the limit of {budget.max_total_bytes}; "
                "this looks like a zip bomb"
            )
        nested: list[Path] = []
        for info, rel in planned:
            target = dest / rel
            try:
                inside = _inside(target, dest)
            except OSError as exc:
                raise _unwritable(info, label, exc) from exc
            if not inside:
                raise ArchiveError(f"{label}: entry {info.filename!r} would be written outside the destination")
            _make_folder(target.parent, info, label)
            _stream_entry(zf, info, target, budget, label)
            if rel.suffix.lower() == ".zip":
                nested.append(target)
            else:
                result.files.append(target)
    for inner in nested:
        if depth + 1 > budget.max_depth:
            raise ArchiveError(f"zips nested more than {budget.max_depth} levels deep ({inner.name})")
        folder = _free_folder(inner.with_suffix(""))
        folder.mkdir(parents=True)
        try:
            _extract(inner, folder, budget, result, depth + 1, label=f"{label}/{inner.name}")
        except CorruptArchive as exc:  # (left out alone: the upload's other files are converted)
            cleanup(folder)
            result.files = [path for path in result.files if not path.is_relative_to(folder)]
            inner.with_name(inner.name + UNREADABLE_SUFFIX).write_text(str(exc), encoding="utf-8")
            result.unreadable.append(str(inner.relative_to(dest)))
        else:
            result.nested.append(str(inner.relative_to(dest)))
        inner.unlink()


def _entry_name(info: zipfile.ZipInfo) -> str:
    """The entry's name as its writer meant it: Info-ZIP's Unicode Path extra field when its CRC is that of the
    header's name (Python 3.12's zipfile honours it too); else a name flagged UTF-8 as zipfile read it; else, unflagged,
    as UTF-8 when all of it is UTF-8 and it is not ASCII (many tools write UTF-8 without the flag, and zipfile's CP437
    made "Maïs" "Ma├»s"; CP437 text of letters beyond ASCII is almost never valid UTF-8: the rule of DBF text), else
    as CP437. Cut at a NUL, as zipfile cuts it."""
    flagged = info.flag_bits & UTF8_NAME_FLAG
    raw = info.orig_filename.encode("utf-8" if flagged else "cp437")  # the header's bytes (CP437 maps all 256)
    name = _unicode_path(info.extra, raw)
    if name is None:
        name = info.orig_filename
        if not flagged and not raw.isascii():
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                pass
    return name.split("\x00", 1)[0]


def _unicode_path(extra: bytes, raw: bytes) -> str | None:
    """The name in the entry's Unicode Path extra field, when it has one of version 1 made for the header's name
    `raw` (a tool that renamed the entry left a field whose CRC no longer matches: not taken) and it is UTF-8."""
    while len(extra) >= 4:
        kind, size = struct.unpack_from("<HH", extra)
        data, extra = extra[4 : 4 + size], extra[4 + size :]
        if kind != UNICODE_PATH_FIELD or len(data) < 5 or data[0] != 1:
            continue
        if struct.unpack_from("<L", data, 1)[0] != zlib.crc32(raw):
            continue
        try:
            return data[5:].decode("utf-8") or None
        except UnicodeDecodeError:
            return None
    return None


def _safe_relative(info: zipfile.ZipInfo, label: str) -> PurePosixPath | None:
    """The entry's path relative to the destination; None for junk; ArchiveError for unsafe names."""
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or name.startswith("//"):
        raise ArchiveError(f"{label}: entry {info.filename!r} has an absolute path, which is not allowed")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ArchiveError(f"{label}: entry {info.filename!r} points outside the archive (path traversal)")
    if not parts:
        return None
    if any(p.lower() in JUNK_DIRS for p in parts) or parts[-1].lower() in JUNK_FILES or parts[-1].startswith("._"):
        return None
    if any("\x00" in p for p in parts):
        raise ArchiveError(f"{label}: entry {info.filename!r} has a NUL character in its name")
    return PurePosixPath(*parts)


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    # Unix mode bits live in the high 16 bits of the external attributes (zero for DOS-made zips).
    return stat.S_ISLNK(info.external_attr >> 16)


def _check_ratio(size: int, compressed: int, name: str, budget: ExtractionBudget, label: str) -> None:
    if budget.too_compressed(size, compressed):
        raise ArchiveError(
            f"{label}: entry {name!r} expands {size / max(compressed, 1):.0f} times "
            f"(limit {budget.max_ratio:.0f}); this looks like a zip bomb"
        )


def _inside(target: Path, dest: Path) -> bool:
    try:
        target.resolve().relative_to(dest)
    except ValueError:
        return False
    return True


def _make_folder(folder: Path, info: zipfile.ZipInfo, label: str) -> None:
    """Create the folder an entry goes in; ArchiveError when the entries clash or a name cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise ArchiveError(
            f"{label}: entry {info.filename!r} needs a folder where another entry is a file of the same name"
        ) from exc
    except OSError as exc:
        if disk_failure(exc):
            raise
        raise _unwritable(info, label, exc) from exc


def _unwritable(info: zipfile.ZipInfo, label: str, exc: OSError) -> ArchiveError:
    if exc.errno == errno.ENAMETOOLONG:
        shown = info.filename if len(info.filename) <= 80 else info.filename[:80] + "..."
        return ArchiveError(f"{label}: entry {shown!r} has a name or path too long to be extracted")
    return ArchiveError(f"{label}: entry {info.filename!r} cannot be extracted ({exc.strerror or exc})")


def _stream_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget, label: str) -> None:
    """Copy one entry in chunks, counting real bytes: declared sizes can lie."""
    written = 0
    try:
        with zf.open(info) as src, open(target, "xb") as out:
            while True:
                chunk = src.read(CHUNK)
                if not chunk:
                    break
                written += len(chunk)
                budget.add_bytes(len(chunk), info.filename)
                if budget.too_compressed(written, info.compress_size):
                    raise ArchiveError(
                        f"{label}: entry {info.filename!r} expands more than {budget.max_ratio:.0f} times its "
                        "compressed size; this looks like a zip bomb"
                    )
                if written > info.file_size:
                    raise ArchiveError(f"{label}: entry {info.filename!r} is larger than its declared size")
                out.write(chunk)
    except ArchiveError:
        target.unlink(missing_ok=True)
        raise
    except FileExistsError as exc:
        if target.is_dir():
            raise ArchiveError(
                f"{label}: entry {info.filename!r} is a file where another entry needs a folder of the same name"
            ) from exc
        raise ArchiveError(f"{label}: entry {info.filename!r} appears twice") from exc
    except RuntimeError as exc:  # zipfile: encrypted entry (a flag the directory did not show)
        target.unlink(missing_ok=True)
        raise CorruptArchive(f"{label}: entry {info.filename!r} is encrypted (password protected)") from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise _unwritable(info, label, exc) from exc
        target.unlink(missing_ok=True)
        if disk_failure(exc):
            raise
        raise CorruptArchive(f"{label}: entry {info.filename!r} is corrupt or truncated ({exc})") from exc
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError) as exc:
        target.unlink(missing_ok=True)
        raise CorruptArchive(f"{label}: entry {info.filename!r} is corrupt or truncated ({exc})") from exc


def _free_folder(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}_{n}")
        n += 1
    return candidate


def cleanup(folder: str | os.PathLike) -> None:
    """Remove an extraction folder (ignoring errors: it is scratch space)."""
    shutil.rmtree(folder, ignore_errors=True)
