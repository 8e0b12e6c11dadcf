#!/usr/bin/env bash
# Print a Python >= 3.11 that can load SQLite extensions (SpatiaLite needs it). pyenv builds often
# cannot, Debian's /usr/bin/python3 can; we try that first.
set -u
for py in /usr/bin/python3 /usr/bin/python3.12 /usr/bin/python3.11 "$(command -v python3 2>/dev/null)"; do
  [ -n "$py" ] && [ -x "$py" ] || continue
  if "$py" - <<'PY' 2>/dev/null; then
import sqlite3, sys, venv, ensurepip
assert sys.version_info >= (3, 11)
sqlite3.connect(":memory:").enable_load_extension(True)
PY
    echo "$py"; exit 0
  fi
done
exit 1
