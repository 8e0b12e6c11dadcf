"""Where a batch's and a file's bytes live: Django storage names, the local work folder, streamed writes.

Storage names: `batches/<batch>.zip` (the upload), `datasets/<batch>/<position>.zip` (the files of one data set,
served as a file's `originalFile`), `files/<file>/points.npz` (converted points, `conversion.pointstore`),
`files/<file>/raw.npz` (the source's own columns), `files/<file>/standard.geojson`, `files/<file>/raw.geojson`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files import File as DjangoFile
from django.core.files.storage import default_storage


def work_dir() -> Path:
    return Path(settings.CONVERSION_WORK_DIR or Path(settings.MEDIA_ROOT) / ".work")


def batch_work_root() -> Path:
    return work_dir() / "batches"


def batch_work_dir(batch_id) -> Path:
    return batch_work_root() / str(batch_id)


def file_prefix(file_id) -> str:
    return f"files/{file_id}"


@contextlib.contextmanager
def local_path(name: str) -> Iterator[Path]:
    """A local path for a stored file: the file itself on local storage, else a temporary copy."""
    try:
        path = Path(default_storage.path(name))
    except NotImplementedError:  # (a storage of no local files; only its `path`, not the caller's body, is tried)
        path = None
    if path is not None:
        yield path
        return
    work_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=work_dir(), suffix=Path(name).suffix) as tmp:
        with default_storage.open(name, "rb") as src:
            shutil.copyfileobj(src, tmp, 1024 * 1024)
        tmp.flush()
        yield Path(tmp.name)


def store_stream(name: str, write: Callable[[IO[bytes]], object]) -> tuple[str, object]:
    """Store what `write(fileobj)` writes under exactly `name` (replacing it); returns (name, write's result).

    The bytes go to a temporary file on local disk first, so a large output is never held in memory. On the local
    file system that file is written beside its place and renamed into it: copied, an output took twice its size
    at its peak (a full disk failed at half of it), and what a failed write left is removed at once."""
    try:
        target = Path(default_storage.path(name))
    except NotImplementedError:
        target = None
    if target is not None:
        return name, _write_in_place(target, write)
    work_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=work_dir()) as tmp:
        result = write(tmp)
        tmp.seek(0)
        if default_storage.exists(name):
            default_storage.delete(name)
        stored = default_storage.save(name, DjangoFile(tmp, name=os.path.basename(name)))
    return stored, result


# A write in progress on the local file system: `.<name>.<uuid hex>.part` beside its place (`_write_in_place`).
PARTIAL_WRITE = re.compile(r"\..+\.[0-9a-f]{32}\.part")
# The folders of `default_storage` that outputs are written into.
OUTPUT_FOLDERS = ("batches", "datasets", "files")


def _write_in_place(target: Path, write: Callable[[IO[bytes]], object]) -> object:
    """`write` into a hidden file beside `target` (`PARTIAL_WRITE`), then renamed onto it (a reader never sees it
    half written)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
    try:
        with open(partial, "xb") as fileobj:
            result = write(fileobj)
        if default_storage.file_permissions_mode is not None:
            os.chmod(partial, default_storage.file_permissions_mode)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return result


def partial_writes() -> Iterator[Path]:
    """The partial writes (`PARTIAL_WRITE`) in the output folders, on the local file system (elsewhere, none: the
    bytes go to a temporary file, which the system removes)."""
    for folder in OUTPUT_FOLDERS:
        try:
            root = Path(default_storage.path(folder))
        except NotImplementedError:
            return
        for path in root.rglob(".*.part") if root.is_dir() else ():
            if PARTIAL_WRITE.fullmatch(path.name):
                yield path


def store_zip_of(name: str, paths: list[Path], base: Path) -> str:
    """Store a zip of `paths` (named relative to `base`) under `name`, deflated at zlib's fastest level: at its
    default a 184 MB time log took 9.8 s to store (a 61 MB one 2.8 s, 0.65 s at level 1 for 13 % more bytes)."""

    def write(fileobj: IO[bytes]) -> None:
        with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for path in paths:
                zf.write(path, path.relative_to(base).as_posix())

    return store_stream(name, write)[0]


def listdir(prefix: str) -> tuple[list[str], list[str]]:
    """The folders and files in a storage folder; none when it does not exist."""
    try:
        return default_storage.listdir(prefix)
    except FileNotFoundError:
        return [], []


def delete_tree(prefix: str) -> None:
    """Delete every stored file under a storage folder, subfolders included (a file's outputs and images, a
    batch's data set zips). Local storage also loses the emptied folders."""
    folders, names = listdir(prefix)
    for entry in names:
        default_storage.delete(f"{prefix}/{entry}")
    for folder in folders:
        delete_tree(f"{prefix}/{folder}")
    with contextlib.suppress(NotImplementedError, OSError):
        Path(default_storage.path(prefix)).rmdir()


def remove_work_dir(batch_id) -> None:
    shutil.rmtree(batch_work_dir(batch_id), ignore_errors=True)
