"""Reading an ISOXML file's XML (TASKDATA.XML, a time log's header) safely, with failures a user can read.

The text is decoded here, not by expat, as XML 1.0 Appendix F says: by its byte order mark (which wins over what the
declaration names: a UTF-8 BOM before `encoding="ISO-8859-1"` was read as Latin-1), else in the encoding the
declaration names (expat knows only UTF-8, UTF-16, ISO-8859-1 and single-byte pages: "multi-byte encodings are not
supported" for a Shift_JIS task), else UTF-8. Text that is not in that encoding fails the file saying so and where
(it was "not well-formed (invalid token)"); it is not read in another: ISO 11783-10 writes UTF-8, and XML makes such
text a fatal error, so a guess would rename farms and products unsaid.
"""

import codecs
import re
from pathlib import Path
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeET

from conversion.readers.textcodecs import code_page

# Byte order marks, UTF-32's before UTF-16's (UTF-32 LE's starts with UTF-16 LE's), and what "<?" is without one.
_BOMS = (
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)
_UNMARKED = (
    (b"<\0\0\0", "utf-32-le", "UTF-32"),
    (b"\0\0\0<", "utf-32-be", "UTF-32"),
    (b"<\0?\0", "utf-16-le", "UTF-16"),
    (b"\0<\0?", "utf-16-be", "UTF-16"),
)
_DECLARED_ENCODING = re.compile(rb"<\?xml[ \t\r\n][^>]*?encoding[ \t\r\n]*=[ \t\r\n]*([\"'])([A-Za-z][\w.-]*)\1")


def xml_root(path: Path, error: type[Exception], *, what: str = "") -> Element:
    """The root element of the XML file at `path` (defusedxml: no entities, no DTD, no external references), or
    `error` saying why not, naming the file (`what`: how to call it after its name, e.g. "header")."""
    name = f"{path.name} {what}".rstrip()
    try:
        text = _xml_text(path.read_bytes(), name, error)
        return SafeET.fromstring(text)
    except error:
        raise
    except DefusedXmlException as exc:
        raise error(
            f"{name} declares XML entities or a DTD, which are refused for security ({type(exc).__name__})"
        ) from exc
    except Exception as exc:  # expat's ParseError, OSError
        raise error(f"{name} is not valid XML: {exc}") from exc


def _xml_text(data: bytes, name: str, error: type[Exception]) -> str:
    """The document's text, decoded by its BOM, else in the encoding its declaration names, else as UTF-8."""
    codec, label, why, bom = _encoding(data, name, error)
    data = data[bom:]
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        before = data[: exc.start].decode(codec).replace("\r\n", "\n").replace("\r", "\n")
        line, column = before.count("\n") + 1, len(before) - before.rfind("\n") - 1
        bad = data[exc.start : exc.end]
        raise error(
            f"{name} is not {label} text as {why}: byte{'s' if len(bad) > 1 else ''} "
            f"{' '.join(f'0x{b:02X}' for b in bad)} at line {line}, column {column}"
        ) from None


def _encoding(data: bytes, name: str, error: type[Exception]) -> tuple[str, str, str, int]:
    """(Python's codec, the encoding's name, why, the length of the BOM) of the document `data` (XML 1.0
    Appendix F); `error` for an encoding declared that is no code page (`textcodecs.code_page`)."""
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            return codec, label, "its byte order mark says", len(bom)
    for start, codec, label in _UNMARKED:
        if data.startswith(start):
            return codec, label, "its first characters say", 0
    declared = _DECLARED_ENCODING.match(data)
    if declared is None:
        return "utf-8", "UTF-8", "XML without an encoding declaration must be", 0
    label = declared.group(2).decode("ascii")
    codec = code_page(label)
    if codec is None:
        raise error(f"{name} declares the encoding {label!r}, which is no code page XML text is read in")
    return codec, label, "it declares", 0
