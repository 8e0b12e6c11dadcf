"""Our own ISO 11783-10 (ISOXML) reader: TASKDATA.XML (+ XFR-split files) and the tasks' binary time logs.

- `taskdata`: TASKDATA.XML and its XFR files, id lookups, devices (decoded NAME) and device elements.
- `reader`: `IsoxmlReader`, one point table per task that has time logs (registered on import).
- `parallel`: a task's parallel time logs (CNH, over 255 DLVs) joined by time into one.
The binary time logs themselves are decoded by `tlg.py`.
"""

from .reader import IsoxmlReader

__all__ = ["IsoxmlReader"]
