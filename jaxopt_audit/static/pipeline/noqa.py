"""`# noqa` suppression: bare `# noqa` silences every rule on the line, `# noqa: JAX301, JAX302`
only those codes (prefixes like `JAX3` work too)."""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:[\s,]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)

ALL = None  # marker: a bare noqa


def noqa_codes(line: str) -> frozenset[str] | None | bool:
    """False when the line has no noqa, None for a bare noqa, else the codes it names."""
    if "noqa" not in line.lower():
        return False
    match = _NOQA.search(line)
    if match is None:
        return False
    codes = match.group("codes")
    if not codes:
        return ALL
    return frozenset(c.upper() for c in re.split(r"[\s,]+", codes.strip()) if c)


def suppressed(code: str, line_text: str) -> bool:
    codes = noqa_codes(line_text)
    if codes is False:
        return False
    if codes is None or codes is True:  # ALL (None): a bare `# noqa`
        return True
    return any(code.startswith(c) for c in codes)
