"""The one rule for characters in what people write or vendors send (issue 41).

A spec's raw text, its decoded scalars (after YAML escapes such as ``"\\e"`` or ``"\\x85"``), its keys and
every cell of a score CSV are checked with :func:`forbidden_char`; everything user-supplied that the tool
prints to a terminal goes through :func:`terminal_safe`. Standard library only: this module is on the
CLI's start path.

Forbidden (a located error wherever it appears):

- C0 controls U+0000-U+001F other than tab, line feed and carriage return (where YAML or CSV allows
  them), DEL U+007F and the C1 controls U+0080-U+009F (Unicode's ``Cc``; ESC and CSI start terminal
  escape sequences);
- surrogates U+D800-U+DFFF (not characters; they cannot even be written as UTF-8);
- the 66 Unicode non-characters: U+FDD0-U+FDEF and the last two code points of every plane
  (U+FFFE, U+FFFF, U+1FFFE, ..., U+10FFFF), Unicode 15 section 23.7;
- the bidirectional embeddings, overrides and isolates U+202A-U+202E (LRE, RLE, PDF, LRO, RLO) and
  U+2066-U+2069 (LRI, RLI, FSI, PDI): they reorder what follows them, so that a key, a name or a
  message reads differently from what it holds ("Trojan Source", CVE-2021-42574; Unicode UAX #9).

Allowed on purpose: the implicit bidi marks U+200E (LRM), U+200F (RLM) and U+061C (ALM), and the
zero-width joiners U+200C/U+200D. They cannot reorder text beyond neutral characters and are written
legitimately inside Arabic, Hebrew and Persian names, which an audit's cues hold. :func:`terminal_safe`
still escapes the marks (and the line separators U+2028/U+2029), since they are invisible on a terminal.
"""

from __future__ import annotations

import re

#: Code point ranges (inclusive) that are never allowed; see the module docstring.
FORBIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F),  # C0 controls but tab (09), LF (0A), CR (0D)
    (0x7F, 0x9F),  # DEL and the C1 controls
    (0xD800, 0xDFFF),  # surrogates
    (0x202A, 0x202E), (0x2066, 0x2069),  # bidi embeddings, overrides and isolates
    (0xFDD0, 0xFDEF),  # non-characters
    *((p * 0x10000 + 0xFFFE, p * 0x10000 + 0xFFFF) for p in range(17)),  # non-characters U+xFFFE/F
)

#: Allowed in input but escaped on a terminal (ranges): invisible bidi marks (ALM, LRM, RLM), the Unicode
#: line separators, and the invisible format characters a name never needs to show, so a printed cell
#: cannot look like another (zero-width space, word joiner and invisible operators, the byte-order mark,
#: the tag characters). ZWJ and ZWNJ stay as they are: scripts such as Persian and Devanagari need them.
_INVISIBLE_RANGES = ((0x061C, 0x061C), (0x200B, 0x200B), (0x200E, 0x200F), (0x2028, 0x2029), (0x2060, 0x2064),
                     (0xFEFF, 0xFEFF), (0xE0000, 0xE007F))


def _class(ranges) -> str:
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


_FORBIDDEN = re.compile(f"[{_class(FORBIDDEN_RANGES)}]")
_UNSAFE = re.compile(f"[{_class(FORBIDDEN_RANGES)}{_class(_INVISIBLE_RANGES)}]")
_UNSAFE_LINES = re.compile(f"[\\t\\n\\r{_class(FORBIDDEN_RANGES)}{_class(_INVISIBLE_RANGES)}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def forbidden_char(ch: str) -> bool:
    """Whether the single character ``ch`` is forbidden in a spec or a CSV cell.

    Parameters
    ----------
    ch
        One character (a ``str`` of length 1).

    Returns
    -------
    bool
        True for C0/C1 controls other than tab, LF and CR, DEL, surrogates, non-characters and bidi
        embeddings/overrides/isolates (the module docstring lists them; issue 41).
    """
    return _FORBIDDEN.match(ch) is not None


def first_forbidden(text: str) -> int | None:
    """Index (0-based, in characters) of the first forbidden character of ``text``, or None.

    Tab, line feed and carriage return are allowed here; a caller for which a line break is wrong
    (a key, a CSV cell) checks those itself.
    """
    m = _FORBIDDEN.search(text)
    return m.start() if m else None


def describe(ch: str) -> str:
    """``U+001B`` style name of a character, for messages."""
    return f"U+{ord(ch):04X}"


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def terminal_safe(text: str, *, keep_lines: bool = False) -> str:
    """``text`` with every character that is unsafe on a terminal escaped the way ``repr`` does.

    Escaped: every :func:`forbidden_char` (ESC becomes ``\\x1b``, CSI ``\\x9b``, RLO ``\\u202e``, a lone
    surrogate ``\\udc80``), the invisible bidi marks and line separators, and tab, line feed and
    carriage return (``\\t``, ``\\n``, ``\\r``) unless ``keep_lines`` keeps tab and line feed for a
    multi-line message. Printable text, backslashes included, is returned unchanged, so that a path or
    a name reads as written (issue 41: "everything user-supplied that the tool prints is escaped").

    Parameters
    ----------
    text
        Any string (a value from a spec, a CSV cell, a header, a file name).
    keep_lines
        Keep ``\\t`` and ``\\n`` as they are (a carriage return is still escaped: it can overwrite a
        line on a terminal).
    """
    if not isinstance(text, str):
        text = str(text)
    if keep_lines:
        return _UNSAFE.sub(lambda m: _escape(m.group()), text).replace("\r", "\\r")
    return _UNSAFE_LINES.sub(lambda m: _escape(m.group()), text)
