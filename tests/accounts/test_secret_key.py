"""Without SECRET_KEY, each installation makes its own random key once and keeps it (no key written in the code:
whoever read that one could sign tokens and decrypt provider secrets)."""

import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from platform_site.secret_key import stored_secret_key

pytestmark = pytest.mark.embedded

ROOT = Path(__file__).resolve().parents[2]


def test_a_key_is_made_once_readable_by_its_user_only_and_kept(tmp_path):
    path = tmp_path / "var" / "secret-key"
    key = stored_secret_key(path)
    assert len(key) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stored_secret_key(path) == key
    assert stored_secret_key(tmp_path / "elsewhere" / "secret-key") != key


def _settings_key(env: dict) -> str:
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    environment = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"} | {
        "DJANGO_SETTINGS_MODULE": "platform_site.settings"
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment | env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_processes_started_together_without_secret_key_share_one_random_key(tmp_path):
    """The server and its worker start at once: they must sign and check tokens with the same key."""
    with ThreadPoolExecutor(6) as pool:
        keys = set(pool.map(lambda _: _settings_key({"VAR_DIR": str(tmp_path)}), range(6)))
    assert len(keys) == 1
    [key] = keys
    assert key == (tmp_path / "secret-key").read_text().strip()
    assert key != "insecure-embedded-default-change-me"
    # A SECRET_KEY set in the environment is the key, and nothing is written
    other = tmp_path / "other"
    assert (
        _settings_key({"VAR_DIR": str(other), "SECRET_KEY": "from-the-environment-" * 2}) == "from-the-environment-" * 2
    )
    assert not (other / "secret-key").exists()


def test_a_file_system_without_hard_links_still_gets_one_kept_key(tmp_path, monkeypatch):
    def no_links(source, target):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "secret-key"
    key = stored_secret_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stored_secret_key(path) == key
    assert [p.name for p in tmp_path.iterdir()] == ["secret-key"]  # no draft left behind
