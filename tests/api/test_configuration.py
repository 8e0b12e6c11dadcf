"""Configuration from the environment is checked as a process starts (`platform_site.configuration`): a value the
platform cannot work with stops it, naming the variable, where it used to start and fail later (or never say)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from platform_site import configuration

ROOT = Path(__file__).resolve().parents[2]

# Reloads the settings module once per (name, value), in one process: what each start of a process would do.
RELOADS = """
import importlib, json, os, sys
from django.core.exceptions import ImproperlyConfigured
import platform_site.settings as settings
answers = []
for name, value in json.loads(sys.argv[1]):
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        importlib.reload(settings)
        answers.append(None)
    except ImproperlyConfigured as exc:
        answers.append(str(exc))
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before
print(json.dumps(answers))
"""


def _environment(tmp_path) -> dict:
    drop = {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "PROVIDER_SECRETS_KEYS"}
    return {k: v for k, v in os.environ.items() if k not in drop} | {
        "VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "platform_site.settings",
    }


def _python(tmp_path, arguments: list[str], env: dict, *, check: bool = False) -> subprocess.CompletedProcess:
    """This project's Python run with `arguments` in the suite's environment plus `env` (at most a minute)."""
    return subprocess.run(
        [sys.executable, *arguments],
        env=_environment(tmp_path) | env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=check,
        timeout=60,
    )


def _settings_answers(tmp_path, pairs: list[tuple[str, str]]) -> list[str | None]:
    """For each (variable, value): None when the settings take it, else the refusal's message."""
    done = _python(tmp_path, ["-c", RELOADS, json.dumps(pairs)], {}, check=True)
    return json.loads(done.stdout)


def _documented_numbers() -> list[tuple[str, str]]:
    """(variable, its meaning) of every variable of README "Configuration" whose default is a number."""
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Configuration (environment variables)")[1].split("\n\n")[1]
    found = []
    for row in table.splitlines()[2:]:
        names_cell, defaults_cell, meaning = (cell.strip() for cell in row.strip("|").split("|", 2))
        names = re.findall(r"`([A-Z_]+)`", names_cell)
        defaults = [part.strip() for part in defaults_cell.split(",")]
        if len(names) == len(defaults) and all(re.match(r"[0-9]", part) for part in defaults):
            found += [(name, meaning) for name in names]
    return found


def test_every_documented_number_is_refused_unless_it_is_one_the_variable_takes(tmp_path):
    """`WEBHOOK_MAX_IN_FLIGHT_PER_OWNER=-1` held every delivery back, unsaid; `CELERY_WORKER_PREFETCH_MULTIPLIER=-1`
    made a worker that answered pings and took no task; `AUTH_CACHE_SECONDS=30s` was read as 30."""
    documented = _documented_numbers()
    assert len(documented) >= 20, documented  # (the table was read)
    bad = ["abc", "-1", "30s", "1_0", "nan", "inf", "0x10"]
    pairs = [(name, value) for name, _ in documented for value in bad]
    # 0 is taken where the README gives it a meaning ("0 turns a limit off", "0: no limit", "0 reads them...")
    zeros = [(name, "0") for name, meaning in documented if re.search(r"\b0\b", meaning)]
    assert len(zeros) >= 5, zeros
    answers = _settings_answers(tmp_path, pairs + zeros + [(name, "  12 ") for name, _ in documented])
    refusals, zero_answers, padded = (
        answers[: len(pairs)],
        answers[len(pairs) : len(pairs) + len(zeros)],
        answers[len(pairs) + len(zeros) :],
    )
    for (name, value), refusal in zip(pairs, refusals, strict=True):
        assert refusal is not None, f"{name}={value} was taken"
        assert refusal.startswith(f"{name}={value!r} is refused: {name} takes "), refusal
    assert zero_answers == [None] * len(zeros), list(zip(zeros, zero_answers, strict=True))
    assert padded == [None] * len(documented)  # (spaces around a number are no fault)


# Taking 0 though the README's table gives it no meaning: what README "Configuration" names (counts of retries, pauses,
# ages and CONVERSION_MAX_DEPTH)
ZERO_UNSAID = {
    "TASK_DATABASE_RETRIES",
    "TASK_DATABASE_RETRY_SECONDS",
    "DATABASE_CONN_MAX_AGE",
    "WEBHOOK_DELIVERED_KEEP_DAYS",
    "CREDENTIAL_REFRESH_AHEAD_SECONDS",
    "CONVERSION_MAX_DEPTH",
}


def test_zero_is_refused_where_the_readme_gives_it_no_meaning(tmp_path):
    """`CELERY_WORKER_PREFETCH_MULTIPLIER=0` was taken: Celery's unlimited prefetch, one worker holding every task
    queued, where the README says such a 0 is refused."""
    unsaid = [name for name, meaning in _documented_numbers() if not re.search(r"\b0\b", meaning)]
    assert "CELERY_WORKER_PREFETCH_MULTIPLIER" in unsaid and ZERO_UNSAID <= set(unsaid)
    answers = _settings_answers(tmp_path, [(name, "0") for name in unsaid])
    taken = {name for name, answer in zip(unsaid, answers, strict=True) if answer is None}
    assert taken == ZERO_UNSAID


@pytest.mark.parametrize(
    ("name", "value", "takes"),
    [
        ("DATABASE_URL", "postgis//db", "a URL of postgis:// or spatialite://"),
        ("DATABASE_URL", "postgres://h/db", "a URL of postgis:// or spatialite://"),
        ("CELERY_BROKER_URL", "foo://bar", "a URL of redis:// or rediss:// or memory://"),
        ("CELERY_BROKER_URL", "redis//x", "a URL of redis:// or rediss:// or memory://"),
        ("CELERY_BROKER_URL", "redis://h:port/0", "a URL of redis:// or rediss:// or memory://"),
        ("PUBLIC_BASE_URL", "not a url", "a URL of http:// or https:// with a host"),
        ("PUBLIC_BASE_URL", "https://", "a URL of http:// or https:// with a host"),
        ("WEATHER_BASE_URL", "ftp://weather.example", "a URL of http:// or https:// with a host"),
        ("DEBUG", "maybe", "true or false (yes/no, on/off, 1/0)"),
        ("WEBHOOK_ALLOW_PRIVATE_URLS", "sometimes", "true or false (yes/no, on/off, 1/0)"),
        ("LOG_LEVEL", "LOUD", "one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        ("WEBHOOK_RETRY_SCHEDULE", "60,-5", "comma-separated whole numbers, each 0 or more, at most 315360000"),
        ("WEBHOOK_RETRY_SCHEDULE", "60,1_0", "comma-separated whole numbers, each 0 or more, at most 315360000"),
        ("AUTH_CACHE_SECONDS", "３０", "a number, 0 or more, at most 315360000"),  # (float() read it as 30)
        ("WEBHOOK_TIMEOUT_SECONDS", "٥", "a number, above 0, at most 315360000"),
        # (a date that far away overflowed: the sweep that added it to now failed every time)
        ("CONVERSION_STUCK_AFTER_SECONDS", "99999999999999", "a whole number, 1 or more, at most 315360000"),
        ("TASK_DATABASE_RETRIES", "1000", "a whole number, 0 or more, at most 20"),
        ("CONVERSION_MAX_ENTRIES", "9" * 40, "a whole number, 1 or more"),  # (int() refuses 4,301 digits itself)
        ("WEBHOOK_TIMEOUT_SECONDS", "0", "a number, above 0, at most 315360000"),
        ("JWT_LIFETIME_HOURS", "99999999999", "a whole number, 1 or more, at most 87600"),
    ],
)
def test_a_value_of_no_use_is_refused_with_what_the_variable_takes(tmp_path, name, value, takes):
    [refusal] = _settings_answers(tmp_path, [(name, value)])
    assert refusal == f'{name}={value!r} is refused: {name} takes {takes} (README "Configuration").'


@pytest.mark.parametrize(
    "value",
    [
        "postgis://platform:ab/c+d=@db:5432/platform",  # (read as host `platform`, port `ab`: "no number")
        "postgis://platform:12/cd@db:5432/platform",  # (read as host `platform`, port 12, taken, unsaid)
        "postgis://platform:a#b@db/platform",
        "postgis://platform:a?b@db/platform",
    ],
)
def test_a_password_that_needs_percent_encoding_is_refused_saying_so(tmp_path, value):
    """The refusal said only "takes a URL of postgis:// or spatialite://", though the value is one (a production
    try-out); a password holding `/` after digits was even taken, for a host and port that are not the database's."""
    [refusal] = _settings_answers(tmp_path, [("DATABASE_URL", value)])
    assert refusal is not None and "percent-encoded" in refusal and "`%2F`" in refusal, refusal
    assert "ab/c" not in refusal and "12/cd" not in refusal  # (the password is not repeated)
    encoded = (
        value.replace("ab/c", "ab%2Fc").replace("12/cd", "12%2Fcd").replace("a#b", "a%23b").replace("a?b", "a%3Fb")
    )
    assert _settings_answers(tmp_path, [("DATABASE_URL", encoded)]) == [None]


def test_values_the_readme_gives_are_taken(tmp_path):
    pairs = [
        ("DATABASE_URL", "postgis://platform:secret@db:5432/platform"),
        ("DATABASE_URL", "postgis:///platform"),  # (a local socket)
        ("CELERY_BROKER_URL", "redis://redis:6379/0"),
        ("CELERY_BROKER_URL", "rediss://:pw@redis.example:6380/1"),
        ("PUBLIC_BASE_URL", "https://api.example.com"),
        ("DEBUG", "TRUE"),
        ("DEBUG", "off"),
        ("LOG_LEVEL", "warning"),
        ("WEBHOOK_RETRY_SCHEDULE", "60, 1800,3600"),
        ("AUTH_CACHE_SECONDS", "2.5"),
        ("CONVERSION_UPLOAD_MAX_BYTES", ""),  # (empty: the default)
        ("SECRET_KEY", "k" * 32),
        ("PROVIDER_SECRETS_KEYS", "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=, " + "A" * 43 + "="),
    ]
    assert _settings_answers(tmp_path, pairs) == [None] * len(pairs)


def test_lists_keep_their_meaning_of_before(tmp_path):
    """`WEBHOOK_RETRY_SCHEDULE=` was "no retries", and a comma left at the end of a list named nothing (a rotation's
    `PROVIDER_SECRETS_KEYS=<key>,` stopped every process); `ALLOWED_HOSTS=` refused every request."""
    code = (
        "from django.conf import settings; "
        "print(settings.WEBHOOK_RETRY_SCHEDULE, settings.PROVIDER_SECRETS_KEYS, settings.ALLOWED_HOSTS)"
    )
    key = "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU="
    for values, printed in [
        (
            {"WEBHOOK_RETRY_SCHEDULE": "", "ALLOWED_HOSTS": ""},
            "[] [] ['127.0.0.1', 'localhost', 'testserver', '[::1]']",
        ),
        (
            {"WEBHOOK_RETRY_SCHEDULE": "60,1800,", "PROVIDER_SECRETS_KEYS": f"{key},", "ALLOWED_HOSTS": "a.example,"},
            f"[60, 1800] ['{key}'] ['a.example']",
        ),
    ]:
        assert _python(tmp_path, ["-c", code], values, check=True).stdout.strip() == printed


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("DATABASE_URL", "postgres://platform:s3cret@db/platform", "postgres:***@db/platform"),
        ("CELERY_BROKER_URL", "x://:s3cret@r/0", "x:***@r/0"),
        # mistyped, or a password holding / or @: still hidden whole
        ("DATABASE_URL", "postgis:/platform:s3cret@db:5432/platform", "postgis:***@db:5432/platform"),
        ("CELERY_BROKER_URL", "redis//:s3cret@redis:6379/0", "redis//:***@redis:6379/0"),
        ("DATABASE_URL", "postgres://platform:s3c@ret@db/platform", "postgres:***@db/platform"),
        ("DATABASE_URL", "postgres://platform:s3c/ret@db/platform", "postgres:***@db/platform"),
    ],
)
def test_a_password_in_a_refused_url_is_not_repeated(tmp_path, name, value, shown):
    [refusal] = _settings_answers(tmp_path, [(name, value)])
    assert refusal.startswith(f"{name}={shown!r} is refused: ") and "s3c" not in refusal and "ret" not in refusal


def test_a_long_value_is_shown_cut_short(tmp_path):
    [refusal] = _settings_answers(tmp_path, [("CONVERSION_MAX_ENTRIES", "9" * 5000)])
    assert refusal.startswith("CONVERSION_MAX_ENTRIES='" + "9" * 100 + "...' is refused: ")


def test_a_short_secret_key_and_a_key_that_is_no_fernet_key_are_refused_without_being_repeated(tmp_path):
    short, no_key = _settings_answers(
        tmp_path,
        [
            ("SECRET_KEY", "s3cret-but-short"),
            ("PROVIDER_SECRETS_KEYS", "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=,nope"),
        ],
    )
    assert short.startswith("SECRET_KEY is refused: it has 16 characters, and tokens are signed with it: set one of at")
    assert "s3cret" not in short
    assert no_key.startswith("PROVIDER_SECRETS_KEYS is refused: its key 2 is no Fernet key") and "nope" not in no_key


@pytest.mark.parametrize(
    ("name", "value"), [("FILE_STORAGE_BACKEND", "nope.Storage"), ("WEATHER_SOURCE", "fields.weather.Nowhere")]
)
def test_a_class_that_cannot_be_imported_stops_every_process_as_it_starts(tmp_path, name, value):
    """They started cleanly, and every upload (or weather request) was a 500."""
    done = _python(tmp_path, ["manage.py", "check"], {name: value})
    assert done.returncode != 0
    assert done.stderr.splitlines()[-1].startswith(
        f"django.core.exceptions.ImproperlyConfigured: {name}={value!r} is refused: no class of that dotted path"
    ), done.stderr[-2000:]


def test_a_worker_with_a_refused_value_does_not_start(tmp_path):
    """A Celery worker reads the settings as it starts: it stops there, naming the variable."""
    worker = ["-m", "celery", "-A", "platform_site", "worker", "--pool", "solo"]
    done = _python(tmp_path, worker, {"CELERY_WORKER_PREFETCH_MULTIPLIER": "-1"})
    assert done.returncode != 0
    assert "CELERY_WORKER_PREFETCH_MULTIPLIER='-1' is refused" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("process", ["worker", "beat"])
def test_a_worker_or_beat_without_a_broker_does_not_start(tmp_path, process):
    """Without CELERY_BROKER_URL a worker said "ready" on an in-memory broker of its own and never took a task of
    the API's, and beat sent the sweeps to nobody (a production try-out): they stop, saying what is missing."""
    command = ["-m", "celery", "-A", "platform_site", process]
    command += ["--pool", "solo"] if process == "worker" else ["-s", str(tmp_path / "schedule")]
    done = _python(tmp_path, command, {})
    assert done.returncode != 0
    assert "CELERY_BROKER_URL is not set" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("value", "minimum", "above", "answer"),
    [("1e3", 0, False, 1000.0), ("0", 0, False, 0.0), ("0.001", 0, True, 0.001), (" 7 ", 5, False, 7.0)],
)
def test_numbers_within_their_bounds_are_read(monkeypatch, value, minimum, above, answer):
    monkeypatch.setenv("SOME_SECONDS", value)
    assert configuration.number("SOME_SECONDS", 1.0, minimum=minimum, above=above) == answer


def test_unset_and_empty_variables_are_their_default(monkeypatch):
    monkeypatch.delenv("SOME_COUNT", raising=False)
    assert configuration.whole("SOME_COUNT", 4, minimum=1) == 4
    monkeypatch.setenv("SOME_COUNT", "  ")
    assert configuration.whole("SOME_COUNT", 4, minimum=1) == 4
    assert configuration.flag("SOME_COUNT", True) is True
    monkeypatch.setenv("SOME_COUNT", "0")
    with pytest.raises(ImproperlyConfigured, match=r"SOME_COUNT='0' is refused: SOME_COUNT takes a whole number, 1"):
        configuration.whole("SOME_COUNT", 4, minimum=1)


def test_the_readmes_command_gives_the_key_provider_secrets_were_kept_under(settings):
    """Replacing a short SECRET_KEY: the README's one-line command gives the key derived from the old one, which
    PROVIDER_SECRETS_KEYS then takes to read what was stored under it."""
    from platform_site.accounts.crypto import _derived_key, secret_decrypt, secret_encrypt

    readme = (ROOT / "README.md").read_text()
    [command] = re.findall(r"`(python3 -c 'import base64,hashlib,sys;[^`]*)`", readme)
    assert command.endswith(' "$OLD_SECRET_KEY"')
    old_key = "a-short-key"
    done = subprocess.run(
        ["bash", "-c", command], env={**os.environ, "OLD_SECRET_KEY": old_key}, capture_output=True, text=True
    )
    derived = done.stdout.strip()
    assert derived == _derived_key(old_key).decode()
    settings.PROVIDER_SECRETS_KEYS, settings.SECRET_KEY = [], old_key
    stored = secret_encrypt("client-secret")
    settings.SECRET_KEY = "k" * 40
    settings.PROVIDER_SECRETS_KEYS = ["47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=", derived]
    assert secret_decrypt(stored) == "client-secret"
