"""PNG map images of machine-data properties (pure Python: numpy, Pillow, pyproj, shapely; no Django).

`render_property_images` is the entry point; see docs/images-notes.md for the decisions behind it.
"""

from .grid import HEXAGON, MAX_IMAGE_SIDE, SHAPES, SQUARE
from .ramp import DEFAULT_COLOR_RAMP, ColorRamp
from .render import DEFAULT_PROJECTION, DEFAULT_RESOLUTION, DEFAULT_SHAPE, PropertyImage, render_property_images

__all__ = [
    "DEFAULT_COLOR_RAMP",
    "DEFAULT_PROJECTION",
    "DEFAULT_RESOLUTION",
    "DEFAULT_SHAPE",
    "HEXAGON",
    "MAX_IMAGE_SIDE",
    "SHAPES",
    "SQUARE",
    "ColorRamp",
    "PropertyImage",
    "render_property_images",
]
