"""Reading an ISOXML file's XML (TASKDATA.XML, a time log's header) safely, with failures a user can read."""

from pathlib import Path
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeET


def xml_root(path: Path, error: type[Exception], *, what: str = "") -> Element:
    """The root element of the XML file at `path` (defusedxml: no entities, no DTD, no external references), or
    `error` saying why not, naming the file (`what`: how to call it after its name, e.g. "header")."""
    name = f"{path.name} {what}".rstrip()
    try:
        return SafeET.parse(str(path)).getroot()
    except DefusedXmlException as exc:
        raise error(
            f"{name} declares XML entities or a DTD, which are refused for security ({type(exc).__name__})"
        ) from exc
    except Exception as exc:  # expat's ParseError, OSError
        raise error(f"{name} is not valid XML: {exc}") from exc
