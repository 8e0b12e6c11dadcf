"""Normalised identity keys of assets: what makes two spellings of one machine, implement or operator the same
(`name_key`, `serial_key`, `vin_key`), and the cleaning of the texts they are made from."""

import re
import unicodedata

from platform_site.text import fit

from ..models import Machine

NAME_KEY_LENGTH = 800  # the columns of the keys (Operator.name_key: OPERATOR_NAME_KEY_LENGTH)
OPERATOR_NAME_KEY_LENGTH = 255
SERIAL_KEY_LENGTH = 255
VIN_KEY_LENGTH = 64


def name_key(*parts: str | None, length: int = NAME_KEY_LENGTH) -> str:
    """Case-, accent-, punctuation- and whitespace-insensitive key of a name ("John Deere  8R!" and
    "john deere 8r" are one), at most `length` characters (normalising can lengthen a text that fits its own
    column: 'ß' upper-cases to 'SS', one Arabic ligature decomposes into 18 letters)."""
    text = " ".join(p for p in parts if p)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    return fit(" ".join(re.sub(r"[\W_]+", " ", text).split()), length)


def serial_key(value: str | None, length: int = SERIAL_KEY_LENGTH) -> str:
    """Serial numbers and VINs compare upper-case without spaces, dashes or dots (at most `length` characters)."""
    return fit(re.sub(r"[\s\-._/]+", "", value or "").upper(), length)


def vin_key(value: str | None) -> str:
    return serial_key(value, VIN_KEY_LENGTH)


def text_clean(value: str | None) -> str | None:
    """Strip text; an empty string is stored as null (not known)."""
    if value is None:
        return None
    value = value.strip()
    return value or None


def machine_keys_set(machine: Machine) -> None:
    """Set the machine's keys from its serial number, VIN and make/model/name (before each save)."""
    machine.serial_key = serial_key(machine.serial_number)
    machine.vin_key = vin_key(machine.vin)
    machine.name_key = name_key(machine.make, machine.model, machine.name)
