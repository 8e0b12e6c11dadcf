"""The SECRET_KEY of an installation that sets none: a random key made once and kept under VAR_DIR.

A default written in the code would be everyone's key: whoever read it could sign tokens (re-date any token
they hold) and decrypt the provider secrets derived from it (`accounts.crypto`)."""

import os
import secrets
import tempfile
from pathlib import Path


def stored_secret_key(path: Path) -> str:
    """The key kept at `path`, made (random, readable by this user only) if there is none. Processes that start
    together (server, worker) agree: the key is written whole to a file of its own, then linked to `path`, which
    only the first of them manages; the others read that one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=".secret-key-")  # (mode 0600)
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_urlsafe(50) + "\n")
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(draft)
    key = path.read_text().strip()
    if not key:
        raise RuntimeError(f"{path} is empty: delete it (tokens issued until now stop working) or set SECRET_KEY.")
    return key
