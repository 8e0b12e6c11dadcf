"""`make bench`: run every benchmark script of this folder in turn and print their figures."""

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "run.py")
    only = set(sys.argv[1:])
    failed = []
    for script in scripts:
        if only and script.stem not in only:
            continue
        print(f"\n=== {script.stem} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script)], cwd=HERE.parent)
        print(f"--- {script.stem}: {time.perf_counter() - started:.1f} s, exit {code}", flush=True)
        if code:
            failed.append(script.stem)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
