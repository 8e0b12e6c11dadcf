"""The SECRET_KEY of an installation that sets none: a random key made once and kept under VAR_DIR.

A default written in the code would be everyone's key: whoever read it could sign tokens (re-date any token
they hold) and decrypt the provider secrets derived from it (`accounts.crypto`)."""

import os
import secrets
import tempfile
import time
from pathlib import Path


def stored_secret_key(path: Path) -> str:
    """The key kept at `path`, made (random, readable by this user only) if there is none. Processes that start
    together (server, worker) agree: the key is written whole to a file of its own, then linked to `path`, which
    only the first of them manages; the others read that one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        key = secrets.token_urlsafe(50) + "\n"
        descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=".secret-key-")  # (mode 0600)
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(key)
            os.link(draft, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: created exclusively, then written
            _create_exclusive(path, key)
        finally:
            os.unlink(draft)
    key = path.read_text().strip()
    if not key:
        raise RuntimeError(f"{path} is empty: delete it (tokens issued until now stop working) or set SECRET_KEY.")
    return key


def _create_exclusive(path: Path, key: str) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        time.sleep(0.2)  # another process made it a moment ago and may still be writing it
        return
    with os.fdopen(descriptor, "w") as file:
        file.write(key)
