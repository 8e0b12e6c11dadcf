"""ISOXML task data: TASKDATA.XML (+ XFR-split files) parsed safely, with lookups by XML id and the device tree.

Files TASKDATA.XML references (XFR files, time logs, grids) are found by name through `DataSetFiles`, the one place
that repairs a data set whose files were moved into a subfolder.

Devices carry their decoded ISO 11783 NAME (device class -> machine or implement, and the operation type it does)
and their device elements with their depth below the device root.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree.ElementTree import Element

from conversion.readers.base import MachineIdentity, UnreadableDataset
from platform_site.text import named_first

from .xmlfile import xml_root

# ISO 11783-1 device classes (ClientNAME bits 49-55) -> operation type.
DEVICE_CLASS_OPERATION: dict[int, str] = {
    2: "tillage",
    3: "tillage",
    4: "planted",
    5: "applied",
    6: "applied",
    7: "harvested",
    8: "harvested",
    9: "harvested",
    25: "applied",
}
DEVICE_CLASS_NAMES: dict[int, str] = {
    0: "non-specific",
    1: "tractor",
    2: "primary soil tillage",
    3: "secondary soil tillage",
    4: "planter/seeder",
    5: "fertilizer",
    6: "sprayer",
    7: "harvester",
    8: "root harvester",
    9: "forage harvester",
    10: "irrigation",
    11: "transport/trailer",
    12: "farmyard work",
    13: "powered auxiliary unit",
    14: "special crops",
    15: "municipal work",
    17: "sensor system",
    25: "slurry/manure applicator",
}
# Self-propelled classes are machines; the rest are implements pulled or carried by one.
MACHINE_CLASSES = frozenset({0, 1, 7, 8, 9})
# DET C: device element type 4 is a section (FORMATS.md 2.3).
SECTION_ELEMENT = 4
AGRICULTURE_INDUSTRY_GROUP = 2


@dataclass
class ClientName:
    """The decoded fields of a 64-bit ISO 11783 NAME (DVC D)."""

    raw: int

    @property
    def industry_group(self) -> int:
        """Industry group (2 = agriculture and forestry)."""
        return (self.raw >> 60) & 0x7

    @property
    def device_class(self) -> int:
        """Device class (meaningful in the agricultural industry group only)."""
        return (self.raw >> 49) & 0x7F

    @property
    def function(self) -> int:
        """Function code."""
        return (self.raw >> 40) & 0xFF

    @property
    def manufacturer_code(self) -> int:
        """ISO manufacturer code."""
        return (self.raw >> 21) & 0x7FF

    @classmethod
    def parse(cls, text: str | None) -> ClientName | None:
        """Parse 16 hex digits; None for missing or malformed names."""
        if not text:
            return None
        try:
            return cls(int(text, 16))
        except ValueError:
            return None


@dataclass
class Device:
    """A DVC with what the reader needs: identity, decoded NAME and its elements."""

    id: str
    designator: str
    serial: str | None
    client_name: ClientName | None

    @property
    def device_class(self) -> int:
        """Agricultural device class, 0 when unknown or outside agriculture."""
        cn = self.client_name
        if cn is None or cn.industry_group != AGRICULTURE_INDUSTRY_GROUP:
            return 0
        return cn.device_class

    def identity(self) -> MachineIdentity:
        """The machine identity this device describes."""
        cls = self.device_class
        return MachineIdentity(
            kind="machine" if cls in MACHINE_CLASSES else "implement",
            name=self.designator or self.id,
            serial_number=self.serial,
            category=DEVICE_CLASS_NAMES.get(cls),
        )


@dataclass
class DeviceElement:
    """A DET: its device, type and depth below the device root (0 = the device itself), its element number, its
    parent element (None at the root) and the device properties (DPT) it references, raw by DDI."""

    id: str
    device_id: str
    type: int
    designator: str
    depth: int
    number: int = 0
    parent_id: str | None = None
    properties: dict[int, int] = field(default_factory=dict)


class DataSetFiles:
    """The files of a task data set by case-insensitive name, with a bounded repair of a rearranged data set.

    ISO 11783-10 keeps TASKDATA.XML and every file it references in one folder, but re-zipped uploads often move the
    logs into a subfolder (`TASKDATA/logs/`). A name missing from the folder is looked for in its subfolders, not
    in another data set's folder (one holding its own TASKDATA.XML, and what is below it), and used when exactly
    one file has that name; one found more than once stays missing (`missing_note` says where it was seen).
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self._own = {p.name.lower(): p for p in folder.iterdir() if p.is_file() and not p.is_symlink()}
        self._below: dict[str, list[Path]] | None = None
        # Files used from a subfolder: they belong to the data set's original files too.
        self.moved: list[Path] = []

    def find(self, name: str) -> Path | None:
        """The data set's file called `name` (any case), or None when it is missing or ambiguous."""
        key = name.lower()
        if key in self._own:
            return self._own[key]
        found = self._subfolder_files().get(key, [])
        if len(found) != 1:
            return None
        if found[0] not in self.moved:
            self.moved.append(found[0])
        return found[0]

    def missing_note(self, name: str) -> str:
        """Why `find(name)` gave nothing, when it is more than absence: '' or ' (found N times: a/X, b/X)'."""
        found = self._subfolder_files().get(name.lower(), []) if name.lower() not in self._own else []
        if len(found) < 2:
            return ""
        places = ", ".join(p.relative_to(self.folder).as_posix() for p in found[:5])
        return f" (found {len(found)} times in subfolders, so none is used: {places})"

    def _subfolder_files(self) -> dict[str, list[Path]]:
        """Files below the folder by lower-case name, outside other task data sets; listed once, on first need."""
        if self._below is None:
            self._below = {}
            for dirpath, dirnames, filenames in os.walk(self.folder, followlinks=False):
                dirnames.sort()
                here = Path(dirpath)
                if here == self.folder:
                    continue
                if any(f.lower() == "taskdata.xml" for f in filenames):
                    dirnames[:] = []  # another data set: its files are its own
                    continue
                for filename in sorted(filenames):
                    path = here / filename
                    if path.is_file() and not path.is_symlink():
                        self._below.setdefault(filename.lower(), []).append(path)
        return self._below


@dataclass
class TaskData:
    """TASKDATA.XML with XFR-split files merged in, and lookups by XML id."""

    folder: Path
    elements: list[Element]
    by_id: dict[str, Element]
    devices: dict[str, Device]
    dets: dict[str, DeviceElement]
    files: DataSetFiles
    warnings: list[str] = field(default_factory=list)

    def find_file(self, name: str) -> Path | None:
        """A file of the data set by case-insensitive name (`DataSetFiles.find`: a moved file is found too)."""
        return self.files.find(name)

    def sections_below(self, det_id: str) -> list[DeviceElement]:
        """The section elements (DET type 4) below `det_id` in its device, by element number: the sections its
        condensed work state numbers. A section's own sub-elements are not sections of it."""
        children: dict[str, list[DeviceElement]] = {}
        for det in self.dets.values():
            if det.parent_id is not None:
                children.setdefault(det.parent_id, []).append(det)
        found: list[DeviceElement] = []
        todo, seen = list(children.get(det_id, [])), {det_id}
        while todo:
            det = todo.pop()
            if det.id in seen:
                continue
            seen.add(det.id)
            if det.type == SECTION_ELEMENT:
                found.append(det)
            else:
                todo.extend(children.get(det.id, []))
        return sorted(found, key=lambda d: d.number)


def _parse_xml(path: Path) -> Element:
    return xml_root(path, UnreadableDataset)


def load_taskdata(taskdata_xml: Path) -> TaskData:
    """Parse TASKDATA.XML and the XFR files it references; build id lookups and the device tree."""
    folder = taskdata_xml.parent
    files = DataSetFiles(folder)
    root = _parse_xml(taskdata_xml)
    if not root.tag.startswith("ISO11783_TaskData"):
        raise UnreadableDataset(f"{taskdata_xml.name}: root element is <{root.tag}>, not <ISO11783_TaskData>")
    warnings: list[str] = []
    elements: list[Element] = []
    # Each file is read once: an XFR naming TASKDATA.XML itself, or a file already read, merged its elements again
    # each time (a 553-byte upload of 2,000 such XFRs took 1.9 GB, and converted each task again per copy).
    read, again = {taskdata_xml.resolve()}, {}
    for child in root:
        if child.tag != "XFR":
            elements.append(child)
            continue
        ref = child.get("A", "")
        xfr_path = files.find(f"{ref}.xml")
        if xfr_path is None:
            warnings.append(f"external file {ref}.XML referenced by XFR is missing{files.missing_note(f'{ref}.xml')}")
            continue
        if xfr_path.resolve() in read:
            again[ref] = None  # (an ordered set)
            continue
        read.add(xfr_path.resolve())
        xfc = _parse_xml(xfr_path)
        elements.extend(list(xfc))
    if again:
        warnings.append(
            f"external files referenced by XFR again, or TASKDATA itself, are read once: {named_first(list(again), 5)}"
        )

    # Grids (GRD G: file name) are not read, but they are the data set's: a moved one goes with its original files.
    for el in elements:
        for grd in el.iter("GRD"):
            if grd.get("G"):
                files.find(f"{grd.get('G')}.bin")

    by_id: dict[str, Element] = {}
    for el in elements:
        for node in el.iter():
            xml_id = node.get("A") if node.tag in _ID_TAGS else None
            if not xml_id:
                continue
            if xml_id in by_id:
                warnings.append(f"duplicate XML id {xml_id} ({node.tag}); the first one is used")
                continue
            by_id[xml_id] = node

    devices: dict[str, Device] = {}
    dets: dict[str, DeviceElement] = {}
    for el in elements:
        if el.tag != "DVC":
            continue
        dev = Device(el.get("A", ""), (el.get("B") or "").strip(), _clean(el.get("E")), ClientName.parse(el.get("D")))
        devices[dev.id] = dev
        parent_of: dict[str, str] = {}
        det_by_object: dict[str, Element] = {}
        for det in el.findall("DET"):
            det_by_object[det.get("B", "")] = det
            parent_of[det.get("B", "")] = det.get("F", "0")
        properties = _device_properties(el)
        for det in el.findall("DET"):
            depth, obj, seen = 0, det.get("B", ""), set()
            while obj in parent_of and parent_of[obj] in det_by_object and obj not in seen:
                seen.add(obj)
                obj = parent_of[obj]
                depth += 1
            parent = det_by_object.get(parent_of.get(det.get("B", ""), ""))
            parent_id = parent.get("A") if parent is not None and parent is not det else None
            dets[det.get("A", "")] = DeviceElement(
                det.get("A", ""),
                dev.id,
                _int(det.get("C")),
                det.get("D") or "",
                depth,
                number=_int(det.get("E")),
                parent_id=parent_id,
                properties={
                    ddi: value for dor in det.findall("DOR") for ddi, value in properties.get(dor.get("A", ""), ())
                },
            )
    return TaskData(folder, elements, by_id, devices, dets, files, warnings)


def _device_properties(device: Element) -> dict[str, list[tuple[int, int]]]:
    """The device's properties (DPT) by object id, as (DDI, raw value); malformed ones are left out."""
    out: dict[str, list[tuple[int, int]]] = {}
    for dpt in device.findall("DPT"):
        try:
            ddi, value = int(dpt.get("B", ""), 16), int(dpt.get("C", ""))
        except ValueError:
            continue
        out.setdefault(dpt.get("A", ""), []).append((ddi, value))
    return out


def _int(text: str | None) -> int:
    """A small whole number written in ASCII digits (an element type or number); 0 otherwise. `str.isdigit` is
    true for "²" and for digits of other scripts, which `int` refuses or reads, and `int` refuses more than 4,300
    digits."""
    return int(text) if text is not None and _SMALL_NUMBER.fullmatch(text.strip()) else 0


_SMALL_NUMBER = re.compile(r"[0-9]{1,9}")
_ID_TAGS = frozenset({"CTR", "FRM", "PFD", "CTP", "CVT", "PDT", "PGP", "DVC", "DET", "WKR", "TSK", "CPC", "VPN"})


def _clean(text: str | None) -> str | None:
    text = (text or "").strip()
    return text or None
