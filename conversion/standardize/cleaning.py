"""Default cleaning, and `standardize` (derive, then clean).

Rules from the supplement: cleaning drops points with rate or mass <= 0, moisture outside (0, 100) and
recordingStatus Off; and points whose yield the machine says is unreliable (`YIELD_IGNORED_COLUMN`: ISOXML's
yield lead/lag ignore times).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from conversion.readers.base import YIELD_IGNORED_COLUMN, PointTable

from .derived import derive
from .properties import PRIMARY_RATES

YIELD_IGNORED_REASON = "yield inside the lead/lag ignore time (DDI 0104/0103)"


@dataclass
class CleanResult:
    """A cleaned table, how many points were dropped, and how many for each reason (first failing rule)."""

    table: PointTable
    dropped: int
    reasons: dict[str, int] = field(default_factory=dict)


def primary_rate(table: PointTable) -> str | None:
    """The column that says how much was harvested / planted / applied at each point, if any."""
    for name in PRIMARY_RATES.get(table.operation_type, ()):
        if name in table.columns:
            return name
    return None


def clean(table: PointTable) -> CleanResult:
    """Default cleaning: drop recordingStatus Off, a yield inside the machine's ignore times, moisture outside
    (0, 100), and rate or mass <= 0 (or missing).

    Each dropped point is counted under the first rule it fails, in that order. The cleaned table has no
    `YIELD_IGNORED_COLUMN` (what it said is done).
    """
    n = len(table)
    keep = np.ones(n, dtype=bool)
    reasons: dict[str, int] = {}

    def drop(mask: np.ndarray, reason: str) -> None:
        newly = keep & mask
        count = int(newly.sum())
        if count:
            reasons[reason] = reasons.get(reason, 0) + count
        keep[newly] = False

    status = table.columns.get("recordingStatus")
    if status is not None:
        drop(np.asarray(status, dtype=float) == 0, "recordingStatus Off")
    ignored = table.columns.get(YIELD_IGNORED_COLUMN)
    if ignored is not None:
        drop(np.asarray(ignored, dtype=float) == 1, YIELD_IGNORED_REASON)
        table = replace(table, columns={k: v for k, v in table.columns.items() if k != YIELD_IGNORED_COLUMN})
    moisture = table.columns.get("harvestMoisture")
    if moisture is not None:
        m = np.asarray(moisture, dtype=float)
        drop(np.isfinite(m) & ((m <= 0) | (m >= 100)), "moisture outside (0, 100)")
    rate_name = primary_rate(table)
    if rate_name is not None:
        rate = np.asarray(table.columns[rate_name], dtype=float)
        drop(~(rate > 0), f"{rate_name} <= 0 or missing")
    if table.operation_type == "harvested" and "wetMass" in table.columns and rate_name != "wetMass":
        mass = np.asarray(table.columns["wetMass"], dtype=float)
        drop(np.isfinite(mass) & (mass <= 0), "wetMass <= 0")
    dropped = n - int(keep.sum())
    return CleanResult(table.select(keep) if dropped else table, dropped, reasons)


def standardize(table: PointTable) -> tuple[PointTable, CleanResult]:
    """Derive then clean: the table behind standardGeojson, and the cleaning report."""
    result = clean(derive(table))
    return result.table, result
