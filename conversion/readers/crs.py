"""Coordinates of files in another coordinate system than WGS84 longitude/latitude (a shapefile's .prj, a GeoJSON
`crs` member of before RFC 7946)."""

from __future__ import annotations

from pyproj import CRS, Transformer

from fields.geodesy import WGS84


def wgs84_transformer(crs: CRS) -> Transformer | None:
    """From `crs` to WGS84 longitude/latitude, x (easting, longitude) first as files write positions; None when
    there is nothing to do (`crs` already is WGS84 longitude/latitude, in either axis order)."""
    if crs.is_geographic and crs.ellipsoid and crs.ellipsoid.name.replace(" ", "").upper() in ("WGS84", "WGS_1984"):
        return None
    if crs.equals(WGS84, ignore_axis_order=True):
        return None
    return Transformer.from_crs(crs, WGS84, always_xy=True)
