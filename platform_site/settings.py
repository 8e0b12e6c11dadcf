"""Settings, all from the environment (django-environ).

Two ways to run one code base: the embedded default (SpatiaLite under `var/`, tasks in-process) when
nothing is configured, and production / `make test` (PostGIS, Celery workers on Redis) through
`DATABASE_URL` and `CELERY_BROKER_URL`.
"""

from datetime import timedelta
from pathlib import Path

import environ

# pyproj's wheel carries its own PROJ; mod_spatialite links Debian's. Loaded in the other order the
# two copies corrupt the heap at interpreter exit, so pyproj is loaded before any connection.
import pyproj  # noqa: F401
from kombu import Queue

from platform_site import configuration as checked
from platform_site.secret_key import stored_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
VAR_DIR = Path(checked.raw("VAR_DIR") or BASE_DIR / "var")

DEBUG = checked.flag("DEBUG", False)
# Without SECRET_KEY, a random key made on the first start and kept in VAR_DIR/secret-key (never one in the code).
SECRET_KEY = checked.secret_key("SECRET_KEY") or stored_secret_key(VAR_DIR / "secret-key")
ALLOWED_HOSTS = checked.names("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver", "[::1]"])
CSRF_TRUSTED_ORIGINS = checked.names("CSRF_TRUSTED_ORIGINS", [])
# A link page's form refused for CSRF gets the link's own page; the admin gets Django's.
CSRF_FAILURE_VIEW = "magiclinks.pages.csrf_failure"
# Public address of the API, used in links we hand out (magic links, download links).
PUBLIC_BASE_URL = checked.url("PUBLIC_BASE_URL", "http://127.0.0.1:8000", schemes=("http", "https"))
# Served over TLS (a public https:// address): the admin's session cookie and the CSRF cookie (the admin, the magic
# link pages' forms) are sent over HTTPS only.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = PUBLIC_BASE_URL.startswith("https://")
# Behind a proxy that ends TLS, links built from the request (paging `Link` headers, file downloads) would say
# http://: trust its `X-Forwarded-Proto: https` then. Only behind a proxy that sets (or strips) that header.
if checked.flag("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "platform_site.accounts.apps.PlatformAdminConfig",  # django.contrib.admin on our site (a refused login: 429)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "leaflet",  # Leaflet's script and styles, served by us: the admin's maps draw offline too
    "django.contrib.gis",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "platform_site.api",
    "platform_site.accounts",
    "platform_site.outbox",
    "webhooks",
    "configs",
    "fields",
    "assets",
    "catalogs",
    "conversion",
    "operations",
    "magiclinks",
]

MIDDLEWARE = [
    "platform_site.api.middleware.ResponseHeadersMiddleware",  # (outside CommonMiddleware, which adds a length)
    "platform_site.api.middleware.HostCheckMiddleware",
    "platform_site.api.middleware.DatabaseOutageMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "platform_site.urls"
# The login never upgrades a password hash (it would revoke the owner's tokens): `platform_site.accounts.backends`.
AUTHENTICATION_BACKENDS = ["platform_site.accounts.backends.OwnerBackend"]
WSGI_APPLICATION = "platform_site.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# Database: SpatiaLite file under var/ unless DATABASE_URL names PostGIS.
DATABASE_URL = checked.url(
    "DATABASE_URL", f"spatialite:///{VAR_DIR / 'platform.sqlite3'}", schemes=("postgis", "spatialite"), host=False
)
DATABASES = {"default": env.db_url_config(DATABASE_URL)}
# (read whatever the database, so a value of no use is refused before it is used)
DATABASE_CONN_MAX_AGE = checked.whole("DATABASE_CONN_MAX_AGE", 300, minimum=0, maximum=checked.TEN_YEARS_SECONDS)
DATABASES["default"].setdefault("ATOMIC_REQUESTS", False)
if DATABASES["default"]["ENGINE"].endswith("spatialite"):
    # Concurrent writers (request threads and the in-process worker) wait instead of failing: up to `timeout`
    # seconds, and each transaction takes the write lock when it begins (IMMEDIATE). A transaction begun as a
    # reader that then writes cannot wait for a writer: SQLite fails it at once ("database is locked").
    options = DATABASES["default"].setdefault("OPTIONS", {})
    options.setdefault("timeout", 30)
    options.setdefault("transaction_mode", "IMMEDIATE")
    # Write-ahead logging: readers never block the writer, nor the writer readers (in the default rollback journal,
    # one long read held every writer back until it ended, and they failed after `timeout`). Writers still take
    # turns. The mode is kept in the file; asking again on each connection is instant.
    options.setdefault("init_command", "PRAGMA journal_mode=WAL")
    SPATIALITE_LIBRARY_PATH = env.str("SPATIALITE_LIBRARY_PATH", default="mod_spatialite")
    if DATABASES["default"]["ENGINE"] == "django.contrib.gis.db.backends.spatialite":
        # The same backend, sending geometries as WKB: GeoDjango's WKT rounds positions, and SpatiaLite parses
        # large WKT very slowly (platform_site/db/spatialite/base.py).
        DATABASES["default"]["ENGINE"] = "platform_site.db.spatialite"
else:
    # A server database keeps each worker's connection between requests (opening one costs more than most
    # requests); a connection found broken is replaced before use. The embedded server opens a thread per
    # request, where a kept connection would only leak, so SpatiaLite keeps the default of 0.
    DATABASES["default"]["CONN_MAX_AGE"] = DATABASE_CONN_MAX_AGE
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.contrib.gis.db.backends.postgis":
        # The same backend, with a health check that asks the server only when its socket says something
        # (platform_site/db/postgis/base.py).
        DATABASES["default"]["ENGINE"] = "platform_site.db.postgis"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# GDAL < 3.9 cannot block file/network access in spatial references; we never hand user input to
# GDAL's SRS parser (projections are validated and used through pyproj), so the warning is moot.
SILENCED_SYSTEM_CHECKS = ["gis.W001"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
MEDIA_ROOT = Path(checked.raw("MEDIA_ROOT") or VAR_DIR / "media")
MEDIA_URL = "media/"
STORAGES = {
    "default": {"BACKEND": checked.raw("FILE_STORAGE_BACKEND") or "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Uploads go to disk past this size, so a request body is never held whole in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_TEMP_DIR = checked.raw("FILE_UPLOAD_TEMP_DIR")

# --- API ------------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["platform_site.api.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "platform_site.api.pagination.PagePagination",
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "platform_site.api.sorting.SortFilter",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "DEFAULT_PARSER_CLASSES": ["platform_site.api.parsers.JSONParser"],
    # No `?format=`: the media type is negotiated from `Accept` alone. The override did nothing on a download but
    # answer its file anyway, and a value without a renderer (`?format=xml`) was a 404 `notFound` on any endpoint.
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "platform_site.api.renderers.WeightedNegotiation",
    "DEFAULT_METADATA_CLASS": "platform_site.api.metadata.ApiMetadata",
    "EXCEPTION_HANDLER": "platform_site.api.errors.problem_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "platform_site.api.schema.RequestRulesAutoSchema",
    "UNAUTHENTICATED_USER": None,
    "COERCE_DECIMAL_TO_STRING": False,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Agricultural Data Platform API",
    "DESCRIPTION": "Fields, machine files, conversion, operations, assets, magic links and webhooks. Every answer "
    "carries `X-Request-Id`, the id its log lines carry (the one the request sent, when it is 1 to 128 letters, "
    "digits or `-_.:`; else a new UUID): quote it when reporting a problem.",
    "VERSION": "1.0.0",
    # 3.1: the deliveries as `webhooks`; schemas are JSON Schema (a nullable key's type lists "null").
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI assets are served by us (no CDN), so /api/docs/ works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # One name per choice set that several serializers share (without them: Status4aaEnum, ProviderAdcEnum).
    "ENUM_NAME_OVERRIDES": {
        "ProviderEnum": "assets.models.Provider",
        "ConnectableProviderEnum": "platform_site.accounts.models.ConnectableProvider",
        "BatchStatusEnum": "conversion.models.BatchStatus",
        "ProcessingStatusEnum": "conversion.models.FileStatus",  # files and operations
        "BoundaryStatusEnum": "fields.models.Boundary.Status",
        "ActiveStatusEnum": "assets.models.Operator.Status",  # operators, boundaries' providerStatus
        "OriginTypeEnum": "assets.models.OriginType",  # machines, their files, implements, operators
        "OperationTypeEnum": "conversion.models.OperationType",  # files and operations
        "WebhookEventEnum": "webhooks.models.EventType",  # a webhook's events, as answered
        "WebhookEventNameEnum": "webhooks.serializers.EVENT_NAMES",  # accepted on registration (with aliases)
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "platform_site.api.schema.postprocess_paging_headers",
        "platform_site.api.schema.postprocess_download_headers",
        "platform_site.api.schema.postprocess_created_headers",
        "platform_site.api.schema.postprocess_idempotency_keys",
        "platform_site.api.schema.postprocess_enum_names",
        "platform_site.api.schema.postprocess_named_schemas",
        "platform_site.api.schema.postprocess_service_tags",
        "platform_site.api.schema.postprocess_operation_summaries",
        "platform_site.api.schema.postprocess_query_parameters",
        "platform_site.api.schema.postprocess_request_body_required",
        "platform_site.api.schema.postprocess_path_parameter_names",
        # The problem+json error answers of every operation.
        "platform_site.api.schema.postprocess_problem_responses",
        # (after every answer is documented: each names its request)
        "platform_site.api.schema.postprocess_request_ids",
        "webhooks.schema.postprocess_webhook_components",
    ],
    # The deliveries a receiver gets, one webhook per event sent (OpenAPI 3.1). One import path naming the whole list
    # (DRF's import of a setting: a string is imported as it is), which webhooks/schema.py builds from EventType.
    "WEBHOOKS": "webhooks.schema.WEBHOOKS",
}
JWT_LIFETIME = timedelta(hours=checked.whole("JWT_LIFETIME_HOURS", 24, minimum=1, maximum=24 * checked.TEN_YEARS_DAYS))
JWT_REMEMBER_ME_LIFETIME = timedelta(
    days=checked.whole("JWT_REMEMBER_ME_DAYS", 30, minimum=1, maximum=checked.TEN_YEARS_DAYS)
)
# On PostgreSQL the owner (and core user) a token names is kept between requests until a change to it is announced
# (platform_site/api/owner_cache.py), and at most this long; 0 reads it on every request.
AUTH_CACHE_SECONDS = checked.number("AUTH_CACHE_SECONDS", 30.0, minimum=0, maximum=checked.TEN_YEARS_SECONDS)
# Password guessing (`platform_site.accounts.throttle`): failures per user name and address, per address, in a window.
LOGIN_FAILURES_PER_USER_AND_ADDRESS = checked.whole("LOGIN_FAILURES_PER_USER_AND_ADDRESS", 10, minimum=0)
LOGIN_FAILURES_PER_ADDRESS = checked.whole("LOGIN_FAILURES_PER_ADDRESS", 100, minimum=0)
LOGIN_FAILURE_WINDOW_SECONDS = checked.whole(
    "LOGIN_FAILURE_WINDOW_SECONDS", 900, minimum=0, maximum=checked.TEN_YEARS_SECONDS
)
PAGE_SIZE_DEFAULT = 20
PAGE_SIZE_MAX = 100

# --- Celery ---------------------------------------------------------------------------------------
# No broker configured: tasks run in-process (an in-memory broker served by a worker thread of
# `manage.py serve`, or eagerly when CELERY_TASK_ALWAYS_EAGER is set, as the test suite does).
CELERY_BROKER_URL = checked.url("CELERY_BROKER_URL", "memory://", schemes=("redis", "rediss", "memory"), host=False)
CELERY_EMBEDDED = CELERY_BROKER_URL.startswith("memory://")
CELERY_TASK_ALWAYS_EAGER = checked.flag("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# With a threads pool on Redis, a multiplier of 1 starves the worker (about one task a second,
# measured in bench/webhooks_delivery.py); 4 keeps every thread busy and acks_late keeps it safe.
CELERY_WORKER_PREFETCH_MULTIPLIER = checked.whole("CELERY_WORKER_PREFETCH_MULTIPLIER", 4, minimum=1)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis redelivers an unacknowledged task after this long (a worker that died mid-task). Each connect to Redis and
# each read of its answer gives up after CELERY_BROKER_TIMEOUT_SECONDS: without a limit, a Redis that takes
# connections and never answers (hung, or a proxy in front of one that is gone) held every write's send, and so its
# request, for ever, until every server thread was held; with it the send fails and is kept in the outbox, as when
# Redis refuses. (A worker's wait for tasks is a BRPOP of 1 s: always answered well within the limit.)
# (not CELERY_-prefixed here: Celery reads every such setting as one of its own)
BROKER_TIMEOUT_SECONDS = checked.number(
    "CELERY_BROKER_TIMEOUT_SECONDS", 5.0, minimum=0, above=True, maximum=checked.TEN_YEARS_SECONDS
)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": checked.whole(
        "CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1, maximum=checked.TEN_YEARS_SECONDS
    ),
    "socket_connect_timeout": BROKER_TIMEOUT_SECONDS,
    "socket_timeout": BROKER_TIMEOUT_SECONDS,
}
# A task acknowledged late whose database failed under it is sent again after this many seconds, doubling each
# time, up to TASK_DATABASE_RETRIES times (10 s to 160 s: about five minutes of outage); then the sweeps see to it.
TASK_DATABASE_RETRY_SECONDS = checked.number("TASK_DATABASE_RETRY_SECONDS", 10.0, minimum=0, maximum=86400)
TASK_DATABASE_RETRIES = checked.whole("TASK_DATABASE_RETRIES", 5, minimum=0, maximum=20)
# Webhook deliveries have a queue of their own: a receiver that hangs holds a delivery up to twice
# WEBHOOK_TIMEOUT_SECONDS, and on one queue a few such receivers of one owner held up every owner's conversions.
# A worker started without `-Q` takes both queues (nothing is left unserved); production runs one for each (README).
CELERY_TASK_DEFAULT_QUEUE = "celery"
# Each queue bound by its own name (without one, both were bound to the exchange by the default key "celery"; Celery
# sends to a queue by its name anyway, but a binding that says what it routes keeps any other sender right).
CELERY_TASK_QUEUES = (Queue("celery", routing_key="celery"), Queue("webhooks", routing_key="webhooks"))
CELERY_TASK_ROUTES = {"webhooks.tasks.webhooks_delivery_send": {"queue": "webhooks"}}
# Each entry runs at beat's start unless its schedule file says it has run (`SweepScheduler`). The embedded server's
# beat thread runs this schedule too, with Celery's own scheduler: its start sends every sweep itself
# (`serve.restart_recovery`).
CELERY_BEAT_SCHEDULER = "platform_site.celery:SweepScheduler"
# Each send written to the schedule file at once (a few a minute): Celery wrote it every 3 minutes, so a beat killed
# meanwhile left the sweeps it had sent as never run, and its next start sent them again.
CELERY_BEAT_SYNC_EVERY = 1
CELERY_BEAT_SCHEDULE: dict = {
    "outbox-send": {"task": "platform_site.outbox.tasks.outbox_send", "schedule": 60.0},
    "webhooks-deliveries-sweep": {"task": "webhooks.tasks.webhooks_deliveries_sweep", "schedule": 60.0},
    "conversion-sweep": {"task": "conversion.tasks.conversion_sweep", "schedule": 300.0},
    "conversion-storage-sweep": {"task": "conversion.tasks.conversion_storage_sweep", "schedule": 3600.0},
    "operations-sweep": {"task": "operations.tasks.operations_sweep", "schedule": 300.0},
    "credentials-refresh": {"task": "magiclinks.tasks.magiclinks_credentials_refresh_sweep", "schedule": 300.0},
    "magiclinks-sweep": {"task": "magiclinks.tasks.magiclinks_sweep", "schedule": 3600.0},
    "idempotency-keys-sweep": {"task": "platform_site.api.tasks.idempotency_keys_sweep", "schedule": 3600.0},
}

# The embedded server (`make run`) closes a connection that sends nothing for this long: a client that announced a
# longer body than it sends, or keeps an idle connection open, held one of its threads for as long as it stayed.
EMBEDDED_READ_TIMEOUT_SECONDS = checked.number(
    "EMBEDDED_READ_TIMEOUT_SECONDS", 60.0, minimum=0, above=True, maximum=checked.TEN_YEARS_SECONDS
)

# --- Webhooks -------------------------------------------------------------------------------------
WEBHOOK_ALLOW_PRIVATE_URLS = checked.flag("WEBHOOK_ALLOW_PRIVATE_URLS", CELERY_EMBEDDED)
# Seconds to wait before each retry after a failed attempt: about 1, 30, 60 and 240 minutes.
WEBHOOK_RETRY_SCHEDULE = checked.wholes(
    "WEBHOOK_RETRY_SCHEDULE", [60, 1800, 3600, 14400], minimum=0, maximum=checked.TEN_YEARS_SECONDS
)
WEBHOOK_TIMEOUT_SECONDS = checked.number(
    "WEBHOOK_TIMEOUT_SECONDS", 5.0, minimum=0, above=True, maximum=checked.TEN_YEARS_SECONDS
)
# A delivered event is kept this long (for operators, in the admin), then forgotten; failed ones stay (failed-calls).
WEBHOOK_DELIVERED_KEEP_DAYS = checked.number(
    "WEBHOOK_DELIVERED_KEEP_DAYS", 7.0, minimum=0, maximum=checked.TEN_YEARS_DAYS
)
# At most this many deliveries of one owner are posted at once (0: no limit); the rest wait their turn.
WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = checked.whole("WEBHOOK_MAX_IN_FLIGHT_PER_OWNER", 4, minimum=0)

# --- Conversion (operations service) --------------------------------------------------------------
# The upload cap of POST /batch: 3 GB (GiB), enforced while the body streams.
CONVERSION_UPLOAD_MAX_BYTES = checked.whole("CONVERSION_UPLOAD_MAX_BYTES", 3 * 1024**3, minimum=1)
# Where uploads stream to (default: MEDIA_ROOT/.uploads, so storing a batch is a rename) and where batch zips are
# extracted for conversion (default: MEDIA_ROOT/.work); both on local disk.
UPLOAD_TEMP_DIR = checked.raw("UPLOAD_TEMP_DIR")
CONVERSION_WORK_DIR = checked.raw("CONVERSION_WORK_DIR")
# Zip safety limits: entries, total bytes once expanded, expansion ratio of one entry, nesting of zips in zips.
CONVERSION_MAX_ENTRIES = checked.whole("CONVERSION_MAX_ENTRIES", 100_000, minimum=1)
CONVERSION_MAX_EXPANDED_BYTES = checked.whole("CONVERSION_MAX_EXPANDED_BYTES", 20 * 1024**3, minimum=1)
CONVERSION_MAX_RATIO = checked.whole("CONVERSION_MAX_RATIO", 200, minimum=1)
CONVERSION_MAX_DEPTH = checked.whole("CONVERSION_MAX_DEPTH", 3, minimum=0)
# A batch or data set still processing after this many seconds is retried (a worker died) up to
# CONVERSION_MAX_ATTEMPTS times, then failed with a reason by the periodic sweep.
CONVERSION_STUCK_AFTER_SECONDS = checked.whole(
    "CONVERSION_STUCK_AFTER_SECONDS", 3600, minimum=1, maximum=checked.TEN_YEARS_SECONDS
)
CONVERSION_MAX_ATTEMPTS = checked.whole("CONVERSION_MAX_ATTEMPTS", 3, minimum=1)

# --- Provider applications and credentials (magic links) -----------------------------------------------------
# Fernet keys: the first encrypts, all decrypt (rotation). Without any, a key is derived from SECRET_KEY.
PROVIDER_SECRETS_KEYS = checked.fernet_keys("PROVIDER_SECRETS_KEYS")
PROVIDER_TOKEN_TIMEOUT_SECONDS = checked.number(
    "PROVIDER_TOKEN_TIMEOUT_SECONDS", 10.0, minimum=0, above=True, maximum=checked.TEN_YEARS_SECONDS
)
# Provider tokens expiring within this many seconds are refreshed by the periodic sweep (every 5 minutes).
CREDENTIAL_REFRESH_AHEAD_SECONDS = checked.whole(
    "CREDENTIAL_REFRESH_AHEAD_SECONDS", 900, minimum=0, maximum=checked.TEN_YEARS_SECONDS
)

# --- Weather (fields service) ---------------------------------------------------------------------
# Any server speaking the Open-Meteo historical API protocol.
# The base map behind the admin's maps of boundaries (Leaflet's {z}/{x}/{y} template); empty: none, the shapes alone.
ADMIN_MAP_TILES_URL = env.str("ADMIN_MAP_TILES_URL", default="https://tile.openstreetmap.org/{z}/{x}/{y}.png")
WEATHER_BASE_URL = checked.url(
    "WEATHER_BASE_URL", "https://archive-api.open-meteo.com/v1/archive", schemes=("http", "https")
)
WEATHER_TIMEOUT_SECONDS = checked.number(
    "WEATHER_TIMEOUT_SECONDS", 10.0, minimum=0, above=True, maximum=checked.TEN_YEARS_SECONDS
)
# Another weather source: the dotted path of a class (`fields.weather.WeatherSource`); empty: Open-Meteo's protocol.
WEATHER_SOURCE = checked.raw("WEATHER_SOURCE") or ""

# Every handler writes its lines without magic link tokens (`platform_site.redaction`: a link's address is its only
# credential, and Django logs the path of each refused request). Django's own handlers are replaced by ours: its
# console handler (under DEBUG) wrote `django` records unfiltered.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "link_tokens": {"()": "platform_site.redaction.LinkTokenFilter"},
        "request_ids": {"()": "platform_site.api.request_ids.RequestIdFilter"},
    },
    "formatters": {
        "django.server": {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        },
        # `<date> <time> <level> <logger>: <message>`, `[request <its X-Request-Id>]` before the message of a line
        # logged while a request was served (or a task it set off ran).
        "request_ids": {"()": "platform_site.api.request_ids.RequestIdFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["link_tokens", "request_ids"],
            "formatter": "request_ids",
        },
        # The embedded server's request lines: refused and failed requests (4xx, 5xx), as it printed them before it
        # had a handler of its own (a line per poll of a batch's status page would bury them).
        "django.server": {
            "class": "logging.StreamHandler",
            "formatter": "django.server",
            "filters": ["link_tokens"],
            "level": "WARNING",
        },
    },
    "root": {"handlers": ["console"], "level": checked.log_level("LOG_LEVEL", "INFO")},
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"handlers": ["django.server"], "level": "INFO", "propagate": False},
        # pyshp warns once per polygon whose rings all run counter-clockwise (it reads them as outer rings, as we
        # want): a line a record, a million for some exporters' files.
        "shapefile": {"level": "ERROR"},
    },
}
