"""Colour ramps whose stops sit at percentiles of a property's values, and the legend that describes them.

A configuration ramp names its stops by percent (`"0%"`, `"35%"`, ... `"100%"`) and gives each an RGB colour.
For one property the stop *values* are the percentiles of that property's finite point values (numpy's default
linear percentile), and a value between two stops gets the colour interpolated linearly between the two stop colours.
The legend has one range per interval between consecutive stops; its colour is the colour of the interval's middle
value, which is exactly what the picture shows there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from configs.defaults import DEFAULT_COLOR_RAMP

NO_VALUE_KEY = "nv"
TRANSPARENT = (0, 0, 0, 0)
# A constant property has no "low" or "high"; painting it with the 0% or 100% colour would suggest one.
CONSTANT_PERCENT = 50.0


def _channels(value, count: int, what: str) -> tuple[int, ...]:
    """Validate a colour given as `count` integers in 0..255."""
    try:
        channels = tuple(int(c) for c in value)
    except (TypeError, ValueError):
        raise ValueError(f"colour of {what} must be a list of {count} integers, got {value!r}") from None
    if len(channels) != count or any(c < 0 or c > 255 for c in channels):
        raise ValueError(f"colour of {what} must be {count} integers in 0..255, got {value!r}")
    return channels


def _percent(key: str) -> float:
    """Parse a stop key such as `"35%"` into 35.0."""
    try:
        percent = float(str(key).strip().removesuffix("%"))
    except ValueError:
        raise ValueError(f"colour ramp key {key!r} is neither a percentage nor 'nv'") from None
    if not 0.0 <= percent <= 100.0:
        raise ValueError(f"colour ramp key {key!r} is outside 0%..100%")
    return percent


def _hex(rgb) -> str:
    """`#RRGGBB` of an RGB triple."""
    return "#{:02X}{:02X}{:02X}".format(*(int(c) for c in rgb))


@dataclass(frozen=True)
class ColorRamp:
    """A parsed configuration ramp: stop percents (0 first, 100 last), their RGB colours and the no-value RGBA."""

    percents: np.ndarray
    colors: np.ndarray
    no_value: tuple[int, int, int, int]

    @classmethod
    def from_config(cls, ramp: Mapping | None) -> ColorRamp:
        """Parse a `geoimagesColorRamp` mapping; None gives the default ramp.

        A ramp that does not start at 0% or end at 100% is extended with flat stops of its first or last colour,
        so every value of the property has a colour and a legend range.
        """
        if ramp is None:
            ramp = DEFAULT_COLOR_RAMP
        if not isinstance(ramp, Mapping):
            raise ValueError("colour ramp must be a mapping of percent keys to RGB colours")
        stops: dict[float, tuple[int, ...]] = {}
        no_value = TRANSPARENT
        for key, value in ramp.items():
            if key == NO_VALUE_KEY:
                no_value = _channels(value, 4, NO_VALUE_KEY)
                continue
            percent = _percent(key)
            if percent in stops:
                raise ValueError(f"colour ramp names the {percent:g}% stop twice")
            stops[percent] = _channels(value, 3, key)
        if not stops:
            raise ValueError("colour ramp has no percent stops")
        percents = sorted(stops)
        colors = [stops[p] for p in percents]
        if percents[0] > 0.0:
            percents.insert(0, 0.0)
            colors.insert(0, colors[0])
        if percents[-1] < 100.0:
            percents.append(100.0)
            colors.append(colors[-1])
        return cls(np.array(percents), np.array(colors, dtype=np.float64), no_value)

    def stop_values(self, values: np.ndarray) -> np.ndarray:
        """Values of the stops for one property: the percentiles of its finite `values` (non-empty)."""
        return np.percentile(values, self.percents)

    def constant_color(self) -> np.ndarray:
        """Colour of a property whose values are all equal: the ramp's middle (50%) colour."""
        return np.array([np.interp(CONSTANT_PERCENT, self.percents, self.colors[:, c]) for c in range(3)])

    def colorize(self, values: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """RGB (uint8, shape (n, 3)) of `values` on a ramp whose stops have the values `stops`.

        Between two distinct stop values the colour is interpolated linearly. When several stops share a value (many
        equal values), a value there takes the colour that starts the next legend range; at the maximum it takes
        the colour that ends the last legend range, which is the 100% colour unless the top stops are tied.
        """
        count = len(stops)
        if stops[0] == stops[-1]:
            return np.broadcast_to(np.rint(self.constant_color()).astype(np.uint8), (len(values), 3)).copy()
        index = np.clip(np.searchsorted(stops, values, side="right") - 1, 0, count - 1)
        low = np.minimum(index, count - 2)
        span = stops[low + 1] - stops[low]
        fraction = np.divide(values - stops[low], span, out=np.ones_like(values), where=span > 0)
        np.clip(fraction, 0.0, 1.0, out=fraction)
        # Position on the ramp (stop i is position i), then one fast 1-D interpolation per channel; at and above
        # the maximum, the first stop tied with the maximum is where the last non-empty legend range ends.
        position = np.where(index == count - 1, float(np.searchsorted(stops, stops[-1], side="left")), low + fraction)
        stop_positions = np.arange(count, dtype=np.float64)
        rgb = np.empty((len(values), 3), dtype=np.uint8)
        for channel in range(3):
            rgb[:, channel] = np.rint(np.interp(position, stop_positions, self.colors[:, channel]))
        return rgb

    def legend(self, stops: np.ndarray | None) -> dict:
        """`{"ranges": [{colorCode, min, max}]}`: one range per interval between distinct stop values.

        Intervals of zero width (tied percentiles) are left out, so ranges stay ordered and contiguous. A constant
        property has one range with min == max; a property without values has no ranges.
        """
        if stops is None:
            return {"ranges": []}
        if stops[0] == stops[-1]:
            return {
                "ranges": [
                    {"colorCode": _hex(np.rint(self.constant_color())), "min": float(stops[0]), "max": float(stops[0])}
                ]
            }
        ranges = []
        for i in range(len(stops) - 1):
            if stops[i + 1] > stops[i]:
                middle = np.rint((self.colors[i] + self.colors[i + 1]) / 2.0)
                ranges.append({"colorCode": _hex(middle), "min": float(stops[i]), "max": float(stops[i + 1])})
        return {"ranges": ranges}
