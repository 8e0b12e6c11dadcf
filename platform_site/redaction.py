"""Credentials in addresses kept out of the log lines our processes write.

The token in a link's address (`/links/<token>/...`) is the only credential of its pages, so a log line that holds
it hands the link to whoever reads the logs. Every handler of Django's logging (settings LOGGING: the Celery workers'
and beat's too, `platform_site.celery`), the embedded server's access log (Django's `django.server` logger) and
gunicorn's access and error logs (its worker, `platform_site.server.ProblemThreadWorker`) pass their records through
`LinkTokenFilter`, which writes `/links/[token]/...` instead. The OAuth callback's address (`/links/oauth/callback`)
holds no link token; its query's `code` (a provider's authorization code) and `state` (which names the link's
connection under way) are written `[redacted]`. So is the value of `access_token`, `id_token` or `token` in any
query: a client that sends its bearer token there by mistake (the API reads it only from the Authorization header)
had it logged in full; and so is that of `refresh_token`, `client_secret`, `password` or `api_key`.
"""

import logging
import re


def _as_sent(text: str) -> str:
    """A pattern of `text` as a client may write it in a path: each character as itself or percent-encoded (Django
    serves `/links%2F<token>` and `/%6Cinks/<token>` as `/links/<token>`), slashes repeated, in any case (an address
    that is no page's still holds the token). Linear in a line's length: a run of slashes is taken whole and never
    given back (`++`), and only from its first (a pattern starting anywhere in a run of 16,000 slashes, the path of
    one request, took 19 s: the log line of a 404 held the whole process)."""
    slashes = "(?:/|%2F)++"
    first = "(?<!/)(?<!%2F)" + slashes
    parts = [f"(?:{re.escape(char)}|%{ord(char):02X})" if char != "/" else slashes for char in text]
    if text.startswith("/"):
        parts[0] = first
    return "".join(parts)


# `/links/` and the path segment after it, wherever it stands (a request line, a Referer, a full URL), but the
# callback's fixed address.
LINK_TOKEN = re.compile(_as_sent("/links/") + r"(?!" + _as_sent("oauth/callback") + r"\b)[^/\s?#\"'<>\\]+", re.I)
REDACTED = "/links/[token]"
# A query parameter's value: up to the next parameter, fragment, space or quote.
_VALUE = r"[^&#\s\"'<>\\]*"
# (names of credentials a client may put in a query by mistake: the API reads none from there)
QUERY_TOKEN = re.compile(
    r"([?&](?:access_token|id_token|refresh_token|token|client_secret|password|api_key)=)" + _VALUE, re.IGNORECASE
)
# (slashes after it too: Django answers that address 404, and the line still holds the provider's code)
CALLBACK_QUERY = re.compile(_as_sent("/links/oauth/callback") + r"(?:/|%2F)*\?[^#\s\"'<>\\]*", re.I)
CALLBACK_SECRET = re.compile(r"([?&](?:code|state)=)" + _VALUE)
REDACTED_VALUE = r"\1[redacted]"


def redact(text: str) -> str:
    """`text` with every link token replaced by `[token]`, and the values of token parameters of any query and of
    the OAuth callback's `code` and `state` by `[redacted]`."""
    if "/" in text:
        text = LINK_TOKEN.sub(REDACTED, text)
        text = CALLBACK_QUERY.sub(lambda query: CALLBACK_SECRET.sub(REDACTED_VALUE, query.group()), text)
    if "=" in text:
        text = QUERY_TOKEN.sub(REDACTED_VALUE, text)
    return text


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
