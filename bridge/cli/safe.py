"""Text from engines, shown on a terminal: nothing it contains may steer the terminal.

A request's title, context or option could carry escape sequences (clear the line, move the
cursor, recolour) or bidirectional overrides that make what is approved look like something
else. Every character that is not plain printable text is shown as a visible escape instead.
"""

from __future__ import annotations

import re

# C0 controls except \n and \t, DEL, C1 controls; bidirectional embeddings, overrides and
# isolates; zero-width and line/paragraph separators; the byte order mark
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"<U+{ord(char):04X}>"


def block(text: str) -> str:
    """Text that may span lines (a description, a prompt): line breaks kept, tabs as spaces,
    everything else hidden made visible."""
    return _HIDDEN.sub(_visible, str(text).replace("\r\n", "\n").replace("\t", "    "))


def line(text: object, limit: int | None = None) -> str:
    """Text for one line (a title, a label, a name): line breaks shown as `⏎`, so a value
    cannot start a line of its own that looks like the CLI's output."""
    shown = block(str(text)).replace("\n", "⏎")
    if limit is not None and len(shown) > limit:
        return shown[: max(0, limit - 1)] + "…"
    return shown


def indented(text: str, prefix: str) -> str:
    """`block(text)` with every line behind `prefix`."""
    return "\n".join(prefix + part for part in block(text).split("\n"))
