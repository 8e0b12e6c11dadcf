"""Geometry builders and an independent area computation for the fields tests."""

from pyproj import Transformer
from shapely.geometry import shape
from shapely.ops import transform

from fields.geometry import parse_multipolygon
from fields.services import field_create

BASE = "/services/fields/api"


def rect(lon0: float, lat0: float, lon1: float, lat1: float) -> dict:
    """A GeoJSON MultiPolygon rectangle (counter-clockwise, closed)."""
    ring = [[lon0, lat0], [lon1, lat0], [lon1, lat1], [lon0, lat1], [lon0, lat0]]
    return {"type": "MultiPolygon", "coordinates": [[ring]]}


def provider_field(core_user, geometry=None, **overrides):
    """A field of ProviderA, made as provider sync makes one (`field_create`): its ACTIVE boundary "pb"."""
    values = {
        "provider_name": "ProviderA",
        "provider_field_id": "pf",
        "provider_boundary_id": "pb",
        "provider_status": "ACTIVE",
    } | overrides
    return field_create(core_user=core_user, geometry=parse_multipolygon(geometry or square(1, 1)), **values)


def square(lon: float, lat: float, size: float = 0.01) -> dict:
    return rect(lon, lat, lon + size, lat + size)


def fields_url(core_user) -> str:
    return f"{BASE}/users/{core_user.id}/fields"


def field_url(core_user, field_id) -> str:
    return f"{BASE}/users/{core_user.id}/fields/{field_id}"


def create_field(client, core_user, geometry=None, **body) -> dict:
    response = client.post(fields_url(core_user), {"geometry": geometry or square(10, 50), **body}, format="json")
    assert response.status_code == 201, response.content[:500]
    return response.json()


def equal_area_hectares(geojson: dict) -> float:
    """Independent of the service's pyproj `Geod` call: project onto a Lambert azimuthal equal-area plane
    centred on the shape (WGS84 ellipsoid) and take the planar area."""
    geometry = shape(geojson)
    centre = geometry.centroid
    to_plane = Transformer.from_crs(
        "EPSG:4326", f"+proj=laea +lat_0={centre.y} +lon_0={centre.x} +ellps=WGS84 +units=m", always_xy=True
    )
    return transform(to_plane.transform, geometry).area / 10_000.0
