"""A GeoJSON file read as a stream (uploads may be gigabytes): the top-level object member by member, the `features`
array one feature at a time, each decoded by the standard library's JSON scanner (so values read exactly as
`json.load` reads them: NaN, Infinity, numbers beyond float range, lone surrogates).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO

from conversion.readers.base import UnreadableDataset

from .points import _Points

_READ_CHARS = 1 << 20
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_VALUE_START = frozenset('{["-0123456789tfnNI')


def json_text_file(path: Path) -> IO[str]:
    """The JSON file at `path` opened as text in UTF-8, UTF-16 or UTF-32 as `json.loads` tells them apart (by the
    BOM, else by the zero bytes of the first characters): RFC 8259 asks for UTF-8, but Windows programs save
    "Unicode" (UTF-16 with a BOM), and the API takes UTF-16 and UTF-32 JSON bodies. Text that is not in the encoding
    found fails the read (UnicodeDecodeError)."""
    with open(path, "rb") as fh:
        encoding = json.detect_encoding(fh.read(4))
    return open(path, encoding=encoding)


class _NotJson(Exception):
    """The text is not JSON; the message says where, as `json.JSONDecodeError` does."""


class _JsonStream:
    """A JSON text read a piece at a time, values decoded by the standard library's scanner at `pos` of `text`.

    A value cut by the end of the piece at hand is decoded again once the piece holds more of the file (pieces
    grow to hold the longest value), so the file is never in memory as a whole.
    """

    def __init__(self, fh: IO[str]):
        self._fh = fh
        self._scan = json.JSONDecoder().scan_once
        self._eof = False
        self._base = 0  # characters of the file before `text`
        self._lines = 0  # newlines among them
        self._last_newline = -1  # where the last of them stands in the file
        self.text = ""
        self.pos = 0

    def _more(self) -> bool:
        """Read on (keeping the text from `pos`); False at the end of the file."""
        if self._eof:
            return False
        piece = self._fh.read(max(_READ_CHARS, len(self.text) - self.pos))
        if not piece:
            self._eof = True
            return False
        newlines = self.text.count("\n", 0, self.pos)
        if newlines:
            self._lines += newlines
            self._last_newline = self._base + self.text.rfind("\n", 0, self.pos)
        self._base += self.pos
        self.text = self.text[self.pos :] + piece
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not blank, '' at the end of the file; `pos` stands on it."""
        while True:
            self.pos = _WHITESPACE.match(self.text, self.pos).end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._more():
                return ""

    def expect(self, char: str, message: str) -> None:
        """Step over `char`, the next character that is not blank; `_NotJson` with `message` when it is another."""
        if self.peek() != char:
            raise self.error(message, self.pos)
        self.pos += 1

    def value(self):
        """Decode the next value and step over it."""
        self.peek()
        while True:
            try:
                value, end = self._scan(self.text, self.pos)
            except StopIteration as exc:
                # Nothing a value begins with, or a literal (null, -Infinity...) cut by the end of the piece.
                if len(self.text) - exc.value < 16 and self._more():
                    continue
                raise self.error("Expecting value", exc.value) from None
            except json.JSONDecodeError as exc:
                if (exc.msg.startswith("Unterminated string") or len(self.text) - exc.pos < 16) and self._more():
                    continue
                raise self.error(exc.msg, exc.pos) from None
            if end == len(self.text) and self._more():
                continue  # a number may go on in the next piece
            self.pos = end
            return value

    def error(self, message: str, pos: int) -> _NotJson:
        """`message` at `pos` of the text, with its line, column and character in the file as `json` says them."""
        where = self._base + pos
        line = self._lines + self.text.count("\n", 0, pos) + 1
        newline = self.text.rfind("\n", 0, pos)
        column = where - (self._base + newline if newline >= 0 else self._last_newline)
        return _NotJson(f"{message}: line {line} column {column} (char {where})")


def _read_collection(stream: _JsonStream, name: str) -> dict:
    """The top-level members of the document (the last of a repeated name, as `json.load`), its `features` array
    read as `_Points`. UnreadableDataset when the document is not an object; `_NotJson` when it is not JSON."""
    first = stream.peek()
    if first != "{":
        if first in _VALUE_START and first:
            raise UnreadableDataset(f"{name}: not a GeoJSON FeatureCollection")
        raise stream.error("Expecting value", stream.pos)
    stream.pos += 1
    members: dict = {}
    if stream.peek() == "}":
        stream.pos += 1
    else:
        while True:
            if stream.peek() != '"':
                raise stream.error("Expecting property name enclosed in double quotes", stream.pos)
            key = stream.value()
            stream.expect(":", "Expecting ':' delimiter")
            if key == "features" and stream.peek() == "[":
                members[key] = _read_features(stream)
            elif key in ("type", "crs", "features"):
                members[key] = stream.value()
            else:
                stream.value()
            separator = stream.peek()
            stream.pos += 1
            if separator == "}":
                break
            if separator != ",":
                raise stream.error("Expecting ',' delimiter", stream.pos - 1)
    if stream.peek():
        raise stream.error("Extra data", stream.pos)
    return members


def _read_features(stream: _JsonStream) -> _Points:
    """The array at `pos`, one feature at a time."""
    points = _Points()
    stream.pos += 1
    if stream.peek() == "]":
        stream.pos += 1
        return points
    while True:
        points.add(stream.value())
        separator = stream.peek()
        stream.pos += 1
        if separator == "]":
            return points
        if separator != ",":
            raise stream.error("Expecting ',' delimiter", stream.pos - 1)
