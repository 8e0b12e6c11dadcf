"""Streaming upload of a batch zip: straight to a temporary file next to the media storage, never in memory.

`install_upload_handlers(request)` replaces Django's upload handlers for one request with `ZipUploadHandler`,
which
- refuses a body whose declared length is already beyond the cap (413 before a byte is read),
- counts the bytes of the file while they stream and stops at the cap (413, the partial file is deleted),
- checks the zip signature in the first chunk (400 at once, so 3 GB of something else are never stored),
- writes chunks to a temporary file in `UPLOAD_TEMP_DIR` (on the media file system, so storing the batch is
  a rename, not a copy).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http.multipartparser import MultiPartParserError
from rest_framework.exceptions import ParseError

from platform_site.api.errors import DomainError, InsufficientStorage, storage_full
from platform_site.text import binary_size, storable

ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06")
UPLOAD_FIELD = "file"  # the multipart field of the zip; no other file part is taken
# Room for the multipart envelope and form fields around the file in a body whose length is declared.
MULTIPART_OVERHEAD = 1024 * 1024


class UploadTooLarge(DomainError):
    status_code = 413
    error_key = "fileTooLarge"


class NotAZip(DomainError):
    status_code = 400
    error_key = "invalidArchive"


def upload_max_bytes() -> int:
    return int(settings.CONVERSION_UPLOAD_MAX_BYTES)


# An upload streaming in: `upload_temp_dir()/<random>.upload` (`cleanup.stray_storage_sweep` removes those left).
UPLOAD_SUFFIX = ".upload"


def upload_temp_dir() -> Path:
    return Path(settings.UPLOAD_TEMP_DIR or Path(settings.MEDIA_ROOT) / ".uploads")


def too_large(limit: int) -> UploadTooLarge:
    """The 413 of an upload over `limit` bytes, naming the limit for people (`3 GiB`) and in bytes."""
    size = binary_size(limit)
    if limit >= 1024:
        size += f" ({limit} bytes)"
    return UploadTooLarge(f"The upload is larger than the limit of {size}.")


def not_a_zip() -> NotAZip:
    return NotAZip(
        "The uploaded file is not a zip archive. Upload the machine files as one .zip file.",
        field_errors=[{"field": "file", "message": "Not a zip archive."}],
    )


class TemporaryZip(UploadedFile):
    """An uploaded zip in a named temporary file that is deleted on close unless storage moved it away."""

    def __init__(self, name: str, content_type: str | None, charset: str | None, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        file = tempfile.NamedTemporaryFile(suffix=UPLOAD_SUFFIX, dir=directory)  # noqa: SIM115 (closed by Django)
        super().__init__(file, name, content_type, 0, charset)

    def temporary_file_path(self) -> str:
        return self.file.name

    def close(self):
        try:
            return self.file.close()
        except FileNotFoundError:
            # The storage moved the file into place; nothing left to delete.
            pass


class ZipUploadHandler(FileUploadHandler):
    """Streams the multipart field `file` to disk with the cap and the zip check (see the module doc); any other file
    part, or a second `file`, is a 400."""

    def __init__(self, request=None, *, max_bytes: int | None = None):
        super().__init__(request)
        self.max_bytes = upload_max_bytes() if max_bytes is None else max_bytes
        self.received = 0
        self.zip: TemporaryZip | None = None
        self.head = b""
        self.created: list[TemporaryZip] = []  # every zip written (one: a second `file` is refused)

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > self.max_bytes + MULTIPART_OVERHEAD:
            raise too_large(self.max_bytes)
        return None

    def new_file(self, field_name, file_name, content_type, content_length, charset=None, content_type_extra=None):
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        self._discard()
        if field_name != UPLOAD_FIELD:
            # Streamed as the zip, it was refused as "not a zip" in the name of `file`.
            name = storable(field_name)[:100]
            raise DomainError(
                f"Unexpected file part '{name}': send the zip alone, as the form field '{UPLOAD_FIELD}'.",
                field_errors=[{"field": name, "message": "Unknown field."}],
            )
        if self.created:
            # The last one became the batch, silently.
            raise DomainError(
                f"Send one zip per upload: the form has '{UPLOAD_FIELD}' more than once.",
                field_errors=[{"field": UPLOAD_FIELD, "message": "Given more than once."}],
            )
        self.zip = TemporaryZip(file_name, content_type, charset, upload_temp_dir())
        self.created.append(self.zip)

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.max_bytes:
            self._discard()
            raise too_large(self.max_bytes)
        if len(self.head) < 4:
            self.head += raw_data[: 4 - len(self.head)]
            if len(self.head) >= 4 and not self.head.startswith(ZIP_SIGNATURES):
                self._discard()
                raise not_a_zip()
        try:
            self.zip.write(raw_data)
        except OSError as exc:
            raise self._storage_error(exc) from exc
        return None

    def file_complete(self, file_size):
        if self.head[:4] not in ZIP_SIGNATURES:
            self._discard()
            raise not_a_zip()
        try:
            self.zip.flush()
            os.fsync(self.zip.fileno())
        except OSError as exc:
            raise self._storage_error(exc) from exc
        self.zip.seek(0)
        self.zip.size = file_size
        done, self.zip = self.zip, None
        return done

    def _storage_error(self, exc: OSError) -> Exception:
        """The error to raise for a write of the zip that failed: its partial file goes at once (a full disk gets
        its room back); a full disk is a 507 (`InsufficientStorage`), anything else raised as it is."""
        self._discard()
        return InsufficientStorage() if storage_full(exc) else exc

    def upload_interrupted(self):
        self._discard()

    def _discard(self) -> None:
        if self.zip is not None:
            self.zip.close()
            self.zip = None

    def close_all(self) -> None:
        """Close (and so delete) every temporary file written, those already handed to Django too."""
        self._discard()
        for upload in self.created:
            upload.close()


def install_upload_handlers(request) -> ZipUploadHandler:
    """Make `request` (a Django HttpRequest, or DRF's wrapper) stream its multipart upload via `ZipUploadHandler`."""
    django_request = getattr(request, "_request", request)
    handler = ZipUploadHandler(django_request)
    django_request.upload_handlers = [handler]
    return handler


def upload_parse(request):
    """`request.FILES`, its multipart body parsed now through `ZipUploadHandler`. When the parse fails, every
    temporary file it wrote is deleted: Django closes none on a malformed part after the file, and the whole zip
    stayed on disk until a garbage collection (for ever if the process died first). A body Django's parser cannot
    read is a 400 `malformedRequest` saying why (`MultipartUnreadable`)."""
    handler = install_upload_handlers(request)
    try:
        return request.FILES
    except (MultiPartParserError, ParseError) as exc:
        handler.close_all()
        raise MultipartUnreadable(str(getattr(exc, "detail", exc))) from None
    except BaseException:
        handler.close_all()
        raise


class MultipartUnreadable(DomainError):
    """Django's multipart parser gave up. A part whose headers are not UTF-8 (a file name in another encoding) ends
    so when the file is larger than a few KiB: Django drops the part's headers and reads its bytes as the next
    part's ("Request max total header size exceeded"); the message says what to do about it."""

    error_key = "malformedRequest"

    def __init__(self, reason: str):
        reason = storable(reason.removeprefix("Multipart form parse error - ")).rstrip(".")
        hint = (
            " A part's headers must be UTF-8 text: a file name in another encoding makes its part unreadable; rename"
            " the file and send it again."
            if "header" in reason.lower()
            else ""
        )
        super().__init__(f"The multipart body cannot be read: {reason}.{hint}")
