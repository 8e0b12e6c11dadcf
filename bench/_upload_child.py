"""Child process of bench/conversion.py: receive one generated zip upload of argv[1] bytes through Django's
multipart parser and our streaming handler; print the size and the peak RSS before and after (kB)."""

import io
import os
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")

import django  # noqa: E402

django.setup()

from _django import own_status_kib  # noqa: E402
from django.test import RequestFactory  # noqa: E402

from conversion.uploads import install_upload_handlers  # noqa: E402

SIZE = int(sys.argv[1])
BOUNDARY = b"BenchBoundary"
HEAD = (
    b"--" + BOUNDARY + b'\r\nContent-Disposition: form-data; name="file"; filename="big.zip"\r\n'
    b"Content-Type: application/zip\r\n\r\nPK\x03\x04"
)
TAIL = b"\r\n--" + BOUNDARY + b"--\r\n"
BODY_SIZE = len(HEAD) + SIZE + len(TAIL)


class Body(io.RawIOBase):
    """The request body, made on the fly: never held whole anywhere."""

    def readable(self):
        return True

    def readline(self, size=-1):
        return self.read(size if size and size > 0 else 64 * 1024)

    def __init__(self):
        super().__init__()
        self.pos = 0
        self.zeros = bytes(1024 * 1024)

    def read(self, n=-1):
        n = BODY_SIZE - self.pos if n is None or n < 0 else min(n, BODY_SIZE - self.pos)
        out = bytearray()
        while len(out) < n:
            p = self.pos + len(out)
            if p < len(HEAD):
                out += HEAD[p : p + n - len(out)]
            elif p < len(HEAD) + SIZE:
                out += self.zeros[: min(n - len(out), len(HEAD) + SIZE - p, len(self.zeros))]
            else:
                q = p - len(HEAD) - SIZE
                out += TAIL[q : q + n - len(out)]
        self.pos += n
        return bytes(out)


def peak_rss_kb() -> int:
    """This process's own high-water mark (VmHWM), else ru_maxrss."""
    peak = own_status_kib("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


before = peak_rss_kb()
request = RequestFactory().generic(
    "POST",
    "/services/operations/api/batch",
    b"",
    CONTENT_TYPE=f"multipart/form-data; boundary={BOUNDARY.decode()}",
    CONTENT_LENGTH=str(BODY_SIZE),
    **{"wsgi.input": Body()},
)
install_upload_handlers(request)
upload = request.FILES["file"]
after = peak_rss_kb()
print(upload.size, before, after)
upload.close()
