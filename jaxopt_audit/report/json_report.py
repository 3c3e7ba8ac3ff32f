"""`--format json`: the machine interface of docs/design.md, one object on stdout."""

from __future__ import annotations

import json

from .. import __version__


def render_json(result) -> str:
    return json.dumps({
        "tool": "jaxopt-audit",
        "version": __version__,
        "files_scanned": result.files_scanned,
        "findings": [f.as_dict() for f in result.findings],
        "errors": [e.as_dict() for e in result.errors],
    }, indent=2) + "\n"
