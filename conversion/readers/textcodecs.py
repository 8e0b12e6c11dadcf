"""The text encodings a file inside an upload may name for its text (a shapefile's .cpg, an XML declaration): the
code pages text is written in byte for byte, never a codec that is no such thing (punycode crashed the decoder even
with errors="replace"; UTF-16 and UTF-7 are no DBF text)."""

from __future__ import annotations

import codecs
import re

# Python's multibyte codecs of the East Asian code pages, without the 7-bit stateful ones (ISO-2022, HZ) of mail.
_CJK_CODE_PAGES = frozenset(
    "big5 big5hkscs cp932 cp949 cp950 euc_jis_2004 euc_jisx0213 euc_jp euc_kr gb18030 gb2312 gbk johab shift_jis "
    "shift_jis_2004 shift_jisx0213".split()
)
# Python's names of the single-byte code pages: DOS, Windows and EBCDIC `cpNNN`, ISO-8859, KOI8, Mac and a few more.
_SINGLE_BYTE = re.compile(r"ascii|cp\d+|iso8859-\d+|koi8-[rtu]|mac-[a-z]+|kz1048|ptcp154|tis-620|hp-roman8|palmos")


def code_page(name: str) -> str | None:
    """Python's name of the code page `name` names (any of Python's spellings: "UTF-8", "latin-1", "Shift_JIS"),
    when it is UTF-8, a single-byte code page or an East Asian multibyte one; None for an unknown name and for any
    other codec (UTF-16 and UTF-32, UTF-7, punycode, unicode_escape, bytes codecs such as zlib)."""
    try:
        codec = codecs.lookup(name).name
    except (LookupError, ValueError):  # ValueError: a name holding NUL
        return None
    if codec == "utf-8" or codec in _CJK_CODE_PAGES or _SINGLE_BYTE.fullmatch(codec):
        return codec
    return None


def decodes(text: bytes, codec: str) -> bool:
    """Whether `text` is valid in `codec`; a multibyte character cut at the end (by a DBF field's width) counts."""
    try:
        codecs.getincrementaldecoder(codec)().decode(text, final=False)
    except UnicodeDecodeError:
        return False
    return True
