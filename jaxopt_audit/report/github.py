"""`--format github`: GitHub Actions workflow commands, one annotation per finding."""

from __future__ import annotations


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(result) -> str:
    lines = []
    for f in result.findings:
        level = "error" if f.severity == "error" else ("notice" if f.severity == "info" else "warning")
        if f.cell is not None:
            # A line number would point into the notebook's JSON: annotate the file and say
            # where in the notebook in the message.
            message = f"cell {f.cell}:{f.line}:{f.column}: {f.code} {f.message}. Fix: {f.fix}"
            lines.append(
                f"::{level} file={_escape_property(f.path)},title={_escape_property(f.code + ' ' + f.name)}"
                f"::{_escape_data(message)}")
            continue
        lines.append(
            f"::{level} file={_escape_property(f.path)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},title={_escape_property(f.code + ' ' + f.name)}"
            f"::{_escape_data(f.code + ' ' + f.message + '. Fix: ' + f.fix)}")
    for e in result.errors:
        lines.append(f"::error file={_escape_property(e.path)},title=jaxopt-audit::{_escape_data(e.message)}")
    return "\n".join(lines) + ("\n" if lines else "")
