"""Magic link tokens kept out of the log lines our processes write.

The token in a link's address (`/links/<token>/...`) is the only credential of its pages, so a log line that holds
it hands the link to whoever reads the logs. Every handler of Django's logging (settings LOGGING), the embedded
server's access log (Django's `django.server` logger) and gunicorn's access and error logs (its worker,
`platform_site.server.ProblemThreadWorker`) pass their records through `LinkTokenFilter`, which writes
`/links/[token]/...` instead. The OAuth callback (`/links/oauth/callback`) holds no token and stays as it is.
"""

import logging
import re

# `/links/` and the path segment after it, wherever it stands (a request line, a Referer, a full URL), but the
# callback's fixed address.
LINK_TOKEN = re.compile(r"/links/(?!oauth/callback\b)[^/\s?#\"'<>\\]+")
REDACTED = "/links/[token]"


def redact(text: str) -> str:
    """`text` with every link token replaced by `[token]`."""
    return LINK_TOKEN.sub(REDACTED, text) if "/links/" in text else text


class LinkTokenFilter(logging.Filter):
    """Rewrites a record's message (formatted with its args) and its traceback text without link tokens; lets every
    record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
