"""One exception handler shapes every error as `application/problem+json` (RFC 9457).

Body: `{type, title, status, detail, path, errorKey}` plus `fieldErrors: [{field, message}]` on
validation errors. Services raise `DomainError` subclasses; views never catch and reformat.
"""

import errno
import logging
import threading
import time
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import OperationalError, ProgrammingError
from django.http import Http404, HttpResponse, UnreadablePostError
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from platform_site.api.authentication import BEARER_CHALLENGE, OwnerDeactivated
from platform_site.api.renderers import answered_media_types
from platform_site.db import DEADLOCK, database_unavailable, sqlstate
from platform_site.text import clip, storable

log = logging.getLogger(__name__)

# The detail of every 404: a missing id and another owner's id answer alike.
NOT_FOUND = "The resource was not found."

PROBLEM_CONTENT_TYPE = "application/problem+json"
# A body that stopped arriving before its Content-Length (the server's read timed out, or the connection broke): 408.
BODY_INCOMPLETE = (
    "The request body stopped arriving before the length its Content-Length announced: send the whole body again."
)
DATABASE_BUSY_RETRY_SECONDS = 5
# PostgreSQL's answers to a request that another one's change got in the way of: a deadlock (it was chosen to give
# way), a serialisation failure, a lock it waited for too long. The other request went on; this one may be sent again.
POSTGRESQL_CONFLICTS = frozenset({DEADLOCK, "40001", "55P03"})
CONFLICT_RETRY_SECONDS = 1


def database_busy_wait(exc: OperationalError) -> int | None:
    """Seconds after which a request that failed with `exc` may be sent again, when `exc` says another request's
    change was in the way rather than that something is broken; None otherwise. SQLite (the embedded default)
    waited its `timeout` for another request's write and gave up; PostgreSQL gave way in a deadlock or a
    serialisation failure, or waited for a lock longer than `lock_timeout`."""
    if "database is locked" in str(exc):
        return DATABASE_BUSY_RETRY_SECONDS
    if sqlstate(exc) in POSTGRESQL_CONFLICTS:
        return CONFLICT_RETRY_SECONDS
    return None


# A table or a column the code reads is not in the database: PostgreSQL's undefined_table and undefined_column;
# SQLite says it in words.
POSTGRESQL_UNDEFINED = frozenset({"42P01", "42703"})
SQLITE_UNDEFINED = ("no such table: ", "no such column: ")
NOT_MIGRATED_RETRY_SECONDS = 60
NOT_MIGRATED_DETAIL = "The API's database is being set up or upgraded; try again in a minute."


def database_not_migrated(exc: BaseException) -> bool:
    """Whether `exc` says the database's tables are not those of this release: `manage.py migrate` has not run (a
    new installation, a DATABASE_URL naming another database, an upgrade's code started before its migrations)."""
    if not isinstance(exc, (OperationalError, ProgrammingError)):
        return False
    return sqlstate(exc) in POSTGRESQL_UNDEFINED or str(exc).startswith(SQLITE_UNDEFINED)


def not_migrated_logged(cause: object) -> None:
    """Say in the log, once a minute (`cause_logged`), that the database lacks what this release migrates, `cause`
    telling what: a table or column a request met, or the migrations `/health` found unapplied."""
    cause_logged(
        "not_migrated",
        "The database is not migrated for this release (answered 503 databaseNotMigrated): run `manage.py migrate` "
        "with this DATABASE_URL: %s",
        cause,
    )


def database_problem(exc: BaseException) -> tuple[str, str, int] | None:
    """The 503 of a request that failed with `exc` and may succeed sent again, as (errorKey, detail, seconds for
    Retry-After): the database cannot be reached now (its cause logged), another request's change was in the way
    (`database_busy_wait`), or its tables are not yet those of this release (logged, with what to do); None when
    something is broken."""
    if database_not_migrated(exc):
        not_migrated_logged(exc)
        return "databaseNotMigrated", NOT_MIGRATED_DETAIL, NOT_MIGRATED_RETRY_SECONDS
    if not isinstance(exc, OperationalError):
        return None
    if database_unavailable(exc):
        cause_logged("unavailable", "The database cannot be reached (answered 503 databaseUnavailable): %s", exc)
        detail = "The database cannot be reached right now; try again in a few seconds."
        return "databaseUnavailable", detail, DATABASE_BUSY_RETRY_SECONDS
    if (wait := database_busy_wait(exc)) is not None:
        return "databaseBusy", "The database is busy with another request's change; try again in a few seconds.", wait
    return None


def database_retry_after(exc: BaseException) -> int | None:
    """Seconds after which a request that failed with `exc` may succeed sent again (`database_problem`), None when
    something is broken. For the pages that answer no problem document."""
    problem = database_problem(exc)
    return problem[2] if problem else None


def database_outage(request, exc: BaseException) -> HttpResponse | None:
    """The 503 problem document, with Retry-After, of a request outside DRF (the admin, the API's documentation)
    that failed with `exc` (`database_problem`); None when `exc` says something is broken."""
    if (problem := database_problem(exc)) is None:
        return None
    error_key, detail, wait = problem
    response = _plain_problem(request, 503, error_key, detail)
    response["Retry-After"] = str(wait)
    return response


# SQLite could not grow its database file (SQLITE_FULL); PostgreSQL's disk_full.
SQLITE_FULL = "database or disk is full"
POSTGRESQL_DISK_FULL = "53100"
STORAGE_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
INSUFFICIENT_STORAGE_RETRY_SECONDS = 60
INSUFFICIENT_STORAGE = (
    "The server has no room left to store this request's data; nothing of it was kept. Try again later."
)


def storage_full(exc: BaseException) -> bool:
    """Whether `exc` says the server ran out of room to write: a file's write (ENOSPC, or a quota: EDQUOT), SQLite's
    "database or disk is full", PostgreSQL's disk_full. Not SQLite's "disk I/O error": a full disk may cause it, and
    so may a failing one."""
    if isinstance(exc, OSError):
        return exc.errno in STORAGE_FULL_ERRNOS
    if isinstance(exc, OperationalError):
        return SQLITE_FULL in str(exc) or sqlstate(exc) == POSTGRESQL_DISK_FULL
    return False


DRF_ERROR_KEYS: list[tuple[type[Exception], str]] = [
    (exceptions.ValidationError, "validation"),
    (exceptions.ParseError, "malformedRequest"),
    (OwnerDeactivated, "ownerDeactivated"),
    (exceptions.NotAuthenticated, "unauthorized"),
    (exceptions.AuthenticationFailed, "unauthorized"),
    (exceptions.PermissionDenied, "forbidden"),
    (exceptions.NotFound, "notFound"),
    (exceptions.MethodNotAllowed, "methodNotAllowed"),
    (exceptions.NotAcceptable, "notAcceptable"),
    (exceptions.UnsupportedMediaType, "unsupportedMediaType"),
    (exceptions.Throttled, "tooManyRequests"),
]


class DomainError(Exception):
    """A business rule said no. Subclasses (or instances) carry the status and the stable `errorKey`."""

    status_code = status.HTTP_400_BAD_REQUEST
    error_key = "validation"

    def __init__(
        self,
        detail: str,
        *,
        error_key: str | None = None,
        status_code: int | None = None,
        field_errors: list[dict[str, str]] | None = None,
    ):
        super().__init__(detail)
        self.detail = detail
        if error_key is not None:
            self.error_key = error_key
        if status_code is not None:
            self.status_code = status_code
        self.field_errors = field_errors


class DatabaseNotMigrated(DomainError):
    """The database lacks migrations of this release (`health.unapplied_migrations`): 503, as `database_problem`
    answers a request that meets a table or column they make."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    error_key = "databaseNotMigrated"
    wait = NOT_MIGRATED_RETRY_SECONDS

    def __init__(self):
        super().__init__(NOT_MIGRATED_DETAIL)


class NotFoundError(DomainError):
    status_code = status.HTTP_404_NOT_FOUND
    error_key = "notFound"


class ConflictError(DomainError):
    status_code = status.HTTP_409_CONFLICT
    error_key = "conflict"


class ForbiddenError(DomainError):
    status_code = status.HTTP_403_FORBIDDEN
    error_key = "forbidden"


class ProviderResourceReadOnly(ForbiddenError):
    """Fields and assets that come from a provider or from files are theirs: the API may not change them."""

    error_key = "providerResourceReadOnly"


class ServiceUnavailableError(DomainError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    error_key = "serviceUnavailable"


class InsufficientStorage(DomainError):
    """The server has no room left to write what the request brings (its disk, or its database, is full): 507
    (RFC 4918), with `Retry-After`. Nothing of the request was kept: its transaction rolled back, its upload went."""

    status_code = 507
    error_key = "insufficientStorage"
    wait = INSUFFICIENT_STORAGE_RETRY_SECONDS

    def __init__(self, detail: str = INSUFFICIENT_STORAGE):
        super().__init__(detail)


def problem_body(
    *,
    status_code: int,
    error_key: str,
    detail: str,
    path: str,
    field_errors: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The problem document; `type` is a stable URN built from the errorKey. Its text is `storable`: a message may
    echo the request (an unknown key, a value no choice matches), and a lone surrogate in it failed the rendering.
    It is also bounded (`MESSAGE_MAX` characters a text, `FIELD_ERRORS_MAX` field errors): a 5 MiB value no choice
    matched was echoed whole, twice, a 10 MiB answer."""
    body: dict[str, Any] = {
        "type": f"urn:problem:{error_key}",
        "title": HTTPStatus(status_code).phrase,
        "status": status_code,
        "detail": _text(detail),
        "path": storable(path),
        "errorKey": error_key,
    }
    if field_errors is not None:
        body["fieldErrors"] = [
            {k: _text(v) if isinstance(v, str) else v for k, v in error.items()}
            for error in field_errors[:FIELD_ERRORS_MAX]
        ]
    return body


# The longest text of a problem document (its start and end kept), and how many field errors it lists at the most
# (its detail counts them all).
MESSAGE_MAX = 1000
FIELD_ERRORS_MAX = 1000


def _text(text: str) -> str:
    return clip(storable(text), MESSAGE_MAX)


def flatten_field_errors(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    """Turn DRF's nested error detail into `[{field, message}]` with dotted / indexed field paths."""
    errors: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int):
                errors.extend(flatten_field_errors(value, f"{prefix}[{key}]"))
                continue
            name = "" if key in ("non_field_errors", "__all__") else str(key)
            path = f"{prefix}.{name}" if prefix and name else (prefix or name)
            errors.extend(flatten_field_errors(value, path))
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            errors.extend({"field": prefix, "message": str(item)} for item in detail)
        else:
            for index, item in enumerate(detail):
                if item:
                    errors.extend(flatten_field_errors(item, f"{prefix}[{index}]"))
    else:
        errors.append({"field": prefix, "message": str(detail)})
    return errors


def list_item_errors(items: list, bad, message, *, field: str = "") -> list[dict[str, str]]:
    """Field errors on the entries of a request's list that are in `bad`, each named once, at its first place in
    the list as sent (`events[1]`; `[2]` for a body that is the list itself), in that order; `message(item)`."""
    first: dict = {}
    for index, item in enumerate(items):
        first.setdefault(item, index)
    return [{"field": f"{field}[{index}]", "message": message(item)} for item, index in first.items() if item in bad]


def _summarise(field_errors: list[dict[str, str]]) -> str:
    first = field_errors[0] if field_errors else None
    if not first:
        return "The request is invalid."
    where = f"{first['field']}: " if first["field"] else ""
    more = f" (and {len(field_errors) - 1} more)" if len(field_errors) > 1 else ""
    return f"{where}{first['message']}{more}"


def _what_is_taken(exc: exceptions.APIException, view) -> str:
    """For a 415 and a 406, what the view takes or answers (the messages named only what was refused)."""
    if isinstance(exc, exceptions.UnsupportedMediaType) and view is not None:
        kinds = [parser.media_type for parser in getattr(view, "parser_classes", ())]
        return f" Send {' or '.join(kinds)}." if kinds else ""
    if isinstance(exc, exceptions.NotAcceptable) and view is not None:
        # The renderers negotiated with (a download's own among them), not the view's class list
        renderers = getattr(exc, "available_renderers", None) or view.get_renderers()
        kinds = answered_media_types(renderers)
        return f" This answers {' or '.join(kinds)}." if kinds else ""
    return ""


def problem_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF exception handler: every known error becomes a problem document; unknown ones stay 500."""
    request = context.get("request")
    path = request.path if request is not None else ""
    headers: dict[str, str] = {}

    if isinstance(exc, Http404):
        exc = exceptions.NotFound(NOT_FOUND)
    elif isinstance(exc, UnreadablePostError):
        exc = DomainError(BODY_INCOMPLETE, error_key="requestTimeout", status_code=status.HTTP_408_REQUEST_TIMEOUT)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    elif storage_full(exc):
        exc = InsufficientStorage()

    if isinstance(exc, DomainError):
        body = problem_body(
            status_code=exc.status_code,
            error_key=exc.error_key,
            detail=exc.detail,
            path=path,
            field_errors=exc.field_errors,
        )
        code = exc.status_code
    elif isinstance(exc, exceptions.APIException):
        error_key = next((key for cls, key in DRF_ERROR_KEYS if isinstance(exc, cls)), "error")
        field_errors = None
        if isinstance(exc, exceptions.ValidationError):
            field_errors = flatten_field_errors(exc.detail)
            detail = _summarise(field_errors)
        else:
            detail = str(exc.detail)
            if isinstance(exc, exceptions.UnsupportedMediaType) and request is not None and not request.content_type:
                detail = "The body has no Content-Type."  # (DRF: 'Unsupported media type "" in request.')
            detail += _what_is_taken(exc, context.get("view"))
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            exc.status_code = status.HTTP_401_UNAUTHORIZED
        code = exc.status_code
        body = problem_body(status_code=code, error_key=error_key, detail=detail, path=path, field_errors=field_errors)
    elif (problem := database_problem(exc)) is not None:
        error_key, detail, wait = problem
        code = status.HTTP_503_SERVICE_UNAVAILABLE
        body = problem_body(status_code=code, error_key=error_key, detail=detail, path=path)
        headers["Retry-After"] = str(wait)
    else:
        return None

    if getattr(exc, "wait", None):  # DRF's Throttled, and our errors that say when to try again
        headers["Retry-After"] = str(int(exc.wait))

    if code == status.HTTP_401_UNAUTHORIZED:
        # RFC 9110: a 401 carries a challenge, a domain one too (a refused login answered without it).
        headers["WWW-Authenticate"] = BEARER_CHALLENGE
    # Imported here: `rest_framework.views` loads the parser classes, and ours import this module (an app's admin
    # importing its services, which raise our errors, would otherwise find this module half made).
    from rest_framework.views import set_rollback

    set_rollback()
    if request is not None and not isinstance(getattr(request, "accepted_renderer", None), JSONRenderer):
        # A view that renders something else (the OpenAPI YAML, the Swagger page) answers its problems in JSON too:
        # the body its own renderer made was YAML or plain text under a problem+json Content-Type.
        request.accepted_renderer, request.accepted_media_type = JSONRenderer(), PROBLEM_CONTENT_TYPE
    return Response(body, status=code, headers=headers, content_type=PROBLEM_CONTENT_TYPE)


def _plain_problem(request, status_code: int, error_key: str, detail: str) -> HttpResponse:
    """A problem answered outside DRF, written by DRF's renderer as every other is (compact, UTF-8)."""
    return HttpResponse(
        JSONRenderer().render(
            problem_body(status_code=status_code, error_key=error_key, detail=detail, path=request.path)
        ),
        status=status_code,
        content_type=PROBLEM_CONTENT_TYPE,
    )


def malformed_request(request, detail: str) -> HttpResponse:
    """400 `malformedRequest` saying `detail`, answered outside DRF (the admin's URLs)."""
    return _plain_problem(request, 400, "malformedRequest", detail)


def method_not_allowed(request, allowed: tuple[str, ...]) -> HttpResponse:
    """405 `methodNotAllowed` answered outside DRF (`make run`'s static files), with `Allow` (RFC 9110 15.5.6)."""
    response = _plain_problem(
        request, 405, "methodNotAllowed", f'Method "{storable(request.method)[:40]}" not allowed.'
    )
    response["Allow"] = ", ".join(allowed)
    return response


def length_required(request) -> HttpResponse:
    """411 for a body of unknown length (`platform_site.wsgi.length_unknown`)."""
    return _plain_problem(
        request,
        411,
        "lengthRequired",
        "Send the body with a Content-Length header: chunked transfer encoding is not accepted.",
    )


def coding_unsupported(request) -> HttpResponse:
    """415 for a body sent with a content coding (`platform_site.wsgi.body_encoded`), saying that none is taken
    (`Accept-Encoding: identity`, RFC 9110 15.5.16)."""
    coding = storable(request.META.get("HTTP_CONTENT_ENCODING", ""))[:80]
    response = _plain_problem(
        request,
        415,
        "unsupportedMediaType",
        f'Unsupported content coding "{coding}": send the body as it is, without a Content-Encoding.',
    )
    response["Accept-Encoding"] = "identity"
    return response


# Why the database cannot serve is logged at most once a minute by each process, for each kind of cause: an outage
# answers every request 503, and the answer says nothing of the cause (a wrong password or database name looked like
# a restart).
CAUSE_LOG_SECONDS = 60.0
_causes_logged: dict[str, float] = {}
_causes_lock = threading.Lock()


def cause_logged(kind: str, message: str, cause: object) -> None:
    """`message` logged (its one `%s`: `cause`, an exception's own cause when it has one), unless a line of this
    `kind` was logged by this process in the last CAUSE_LOG_SECONDS."""
    now = time.monotonic()
    with _causes_lock:
        last = _causes_logged.get(kind)
        if last is not None and now - last < CAUSE_LOG_SECONDS:
            return
        _causes_logged[kind] = now
    log.error(message, getattr(cause, "__cause__", None) or cause)


def handler404(request, exception=None):
    """Unknown URLs answer a problem document too."""
    return _plain_problem(request, 404, "notFound", "No such endpoint or resource.")


def handler500(request):
    """Last resort: a problem document, never an HTML page, for an unexpected error."""
    served = getattr(request, "request_id", None)
    logged = f"it has been logged under the request id {served}" if served else "it has been logged"
    return _plain_problem(request, 500, "internalError", f"An unexpected error occurred; {logged}.")


def handler400(request, exception=None):
    if isinstance(exception, RequestDataTooBig):
        # A form field (not the file) past DATA_UPLOAD_MAX_MEMORY_SIZE: too large, as a JSON body that long is.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return _plain_problem(request, 413, "requestTooLarge", f"A form field is larger than {limit} bytes.")
    return _plain_problem(request, 400, "malformedRequest", "The request could not be understood.")
