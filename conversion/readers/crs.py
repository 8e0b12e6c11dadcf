"""Coordinates of files in another coordinate system than WGS84 longitude/latitude (a shapefile's .prj, a GeoJSON
`crs` member of before RFC 7946)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyproj.datadir
from pyproj import CRS, Transformer
from pyproj.exceptions import ProjError

from fields.geodesy import WGS84

from .base import UnreadableDataset

# The datum shift grids of the system's PROJ (Debian's proj-data, which libproj brings: Germany's DHDN BETA2007, New
# Zealand's NZGD49, Switzerland's CHENYX06...), where installed. pyproj's wheel carries none, and without them it
# falls back to a Helmert shift of the datum, 0.5 to 2.5 m off what GDAL (and any GIS) reads from the same file.
SYSTEM_PROJ_DATA = Path("/usr/share/proj")
if SYSTEM_PROJ_DATA.is_dir():
    pyproj.datadir.append_data_dir(str(SYSTEM_PROJ_DATA))


def wgs84_transformer(crs: CRS, *, where: str) -> Transformer | None:
    """From `crs` to WGS84 longitude/latitude, x (easting, longitude) first as files write positions; None when
    there is nothing to do (`crs` already is WGS84 longitude/latitude, in either axis order). UnreadableDataset,
    its message starting with `where` (the file and what names the system: "x.shp: the .prj file"), for a system
    that is no position on the Earth's surface (geocentric, a local engineering system) or that no transformation
    leads from to WGS84 (another body's: a Mars or Moon system)."""
    horizontal = crs.sub_crs_list[0] if crs.is_compound and crs.sub_crs_list else crs
    if horizontal.is_geocentric or not (horizontal.is_geographic or horizontal.is_projected):
        raise UnreadableDataset(
            f"{where} names {crs.name!r} ({crs.type_name}), not a longitude/latitude or map coordinate system: "
            "positions in it cannot be placed on the Earth's surface"
        )
    if (
        horizontal.is_geographic
        and horizontal.ellipsoid
        and horizontal.ellipsoid.name.replace(" ", "").upper() in ("WGS84", "WGS_1984")
        and _degrees_from_greenwich(horizontal)
    ):
        return None
    if horizontal.equals(WGS84, ignore_axis_order=True):
        return None
    try:
        return Transformer.from_crs(horizontal, WGS84, always_xy=True)
    except ProjError:
        raise UnreadableDataset(
            f"{where} names {crs.name!r}, which no transformation leads from to WGS84 longitude/latitude "
            "(a system of another body than the Earth?)"
        ) from None


def _degrees_from_greenwich(crs: CRS) -> bool:
    """Whether a longitude/latitude system counts in degrees from Greenwich: one on the WGS84 ellipsoid that counts in
    grads or from Paris was taken as WGS84 as it was (-93.157 grads read as -93.157 degrees, 9.3 degrees off)."""
    meridian = crs.prime_meridian
    axes = crs.axis_info[:2]
    return (
        (meridian is None or meridian.longitude == 0)
        and len(axes) == 2
        and all(math.isclose(axis.unit_conversion_factor, math.pi / 180, rel_tol=1e-9) for axis in axes)
    )


def declared_crs_contradiction(crs: CRS, x: np.ndarray, y: np.ndarray, declaration: str) -> str | None:
    """Why a file's coordinates `x`, `y` cannot be in `crs`, the system its `declaration` (".prj", "crs member")
    names; None when they can be.

    - A projected system, and every coordinate within longitude/latitude ranges: read so, every point would lie
      within 200 m of the system's origin (for UTM, 500 km west of its zone, on the equator). They are
      longitude/latitude under a wrong declaration, and were read as points off the coast of Ecuador.
    - A longitude/latitude system, and no coordinate within its ranges: they are metres or feet, whose points were
      all dropped without a word.
    """
    finite = np.isfinite(x) & np.isfinite(y)
    if not finite.any():
        return None
    x, y = x[finite], y[finite]
    within = (np.abs(x) <= 180.0) & (np.abs(y) <= 90.0)
    extent = f"x {x.min():g} to {x.max():g}, y {y.min():g} to {y.max():g}"
    if crs.is_projected and within.all():
        return (
            f"the {declaration} names a projected coordinate system ({crs.name}), but every coordinate is within "
            f"longitude/latitude ranges ({extent}): in that system the points would all lie within 200 m of its "
            f"origin. If they are longitude/latitude, leave the {declaration} out; else correct it"
        )
    if crs.is_geographic and not within.any():
        return (
            f"the {declaration} names a longitude/latitude coordinate system ({crs.name}), but no coordinate is "
            f"within longitude -180..180 and latitude -90..90 ({extent}): correct the {declaration}"
        )
    return None
