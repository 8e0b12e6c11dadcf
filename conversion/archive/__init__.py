"""Uploaded zips: safe extraction (`extraction`) and detection of the data sets inside (`detection`); import them
from here."""

from .detection import (
    AG_LEADER,
    CLIMATE,
    CNH_CN1,
    JD_GEN4,
    JD_GS,
    PRECISION_PLANTING,
    TRIMBLE_AGDATA,
    TRIMBLE_AGGPS,
    Detection,
    UnsupportedFound,
    dataset_files,
    detect,
)
from .extraction import ArchiveError, ExtractionBudget, ExtractResult, cleanup, disk_failure, safe_extract

__all__ = [
    "AG_LEADER",
    "CLIMATE",
    "CNH_CN1",
    "JD_GEN4",
    "JD_GS",
    "PRECISION_PLANTING",
    "TRIMBLE_AGDATA",
    "TRIMBLE_AGGPS",
    "ArchiveError",
    "Detection",
    "ExtractResult",
    "ExtractionBudget",
    "UnsupportedFound",
    "cleanup",
    "dataset_files",
    "disk_failure",
    "detect",
    "safe_extract",
]
