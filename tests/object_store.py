"""A storage with no local paths, as an object store is (S3 through django-storages): `path()` is not implemented,
so the code must read and write through the storage. Its objects are files under a private folder, reached only by
the Storage API."""

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage


class ObjectStore(Storage):
    def __init__(self):
        self._root = Path(settings.MEDIA_ROOT) / ".object-store"

    def _local(self, name: str) -> Path:
        return self._root / name

    def _open(self, name, mode="rb"):
        return File(open(self._local(name), mode))

    def _save(self, name, content):
        target = self._local(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        if hasattr(content, "seek"):
            content.seek(0)
        with open(target, "wb") as out:
            for chunk in content.chunks() if hasattr(content, "chunks") else iter(lambda: content.read(1 << 20), b""):
                out.write(chunk)
        return name

    def delete(self, name):
        local = self._local(name)
        if local.is_dir():
            shutil.rmtree(local)
        elif local.exists():
            local.unlink()

    def exists(self, name):
        return self._local(name).exists()

    def listdir(self, path):
        local = self._local(path)
        if not local.is_dir():
            return [], []
        entries = list(os.scandir(local))
        return [e.name for e in entries if e.is_dir()], [e.name for e in entries if e.is_file()]

    def size(self, name):
        return self._local(name).stat().st_size

    def url(self, name):
        return f"https://objects.example/{name}"

    def get_modified_time(self, name):
        return datetime.fromtimestamp(self._local(name).stat().st_mtime, tz=UTC)
