"""`--format sarif`: SARIF 2.1.0 (ruleId = code, rule metadata in tool.driver.rules)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import __version__

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _uri(path: str) -> str:
    p = Path(path)
    return p.as_posix() if not p.is_absolute() else p.as_uri()


def render_sarif(result) -> str:
    rules = result.rules
    index = {r.CODE: i for i, r in enumerate(rules)}
    driver = {
        "name": "jaxopt-audit",
        "version": __version__,
        "informationUri": "https://pypi.org/project/jaxopt-audit/",
        "rules": [{
            "id": r.CODE,
            "name": r.NAME,
            "shortDescription": {"text": r.SUMMARY},
            "fullDescription": {"text": r.doc().split("## Why is this bad?")[0]
                                .replace("## What it does", "").strip()},
            "help": {"text": r.FIX, "markdown": r.markdown()},
            "defaultConfiguration": {"level": LEVELS[r.SEVERITY]},
            "properties": {"tags": ["jax", "performance" if r.SEVERITY != "error" else "correctness"]},
        } for r in rules],
    }
    results = []
    for f in result.findings:
        item = {
            "ruleId": f.code,
            "level": LEVELS.get(f.severity, "warning"),
            "message": {"text": f"{f.message}. Fix: {f.fix}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": _uri(f.path)},
                "region": {"startLine": f.line, "startColumn": f.column,
                           "endLine": f.end_line, "endColumn": f.end_column},
            }}],
        }
        if f.cell is not None:
            # Lines inside a cell are not lines of the .ipynb file: the location is the
            # notebook, with the cell as a logical location and the cell position in properties.
            item["message"]["text"] = f"cell {f.cell}:{f.line}:{f.column}: {item['message']['text']}"
            item["locations"] = [{
                "physicalLocation": {"artifactLocation": {"uri": _uri(f.path)}},
                "logicalLocations": [{"name": f"cell {f.cell}", "kind": "module"}],
            }]
            item["properties"] = {"cell": f.cell, "cellLine": f.line, "cellColumn": f.column,
                                  "cellEndLine": f.end_line, "cellEndColumn": f.end_column}
        if f.code in index:
            item["ruleIndex"] = index[f.code]
        results.append(item)
    notifications = [{
        "level": "error",
        "message": {"text": e.message},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(e.path)}}}],
    } for e in result.errors]
    run = {"tool": {"driver": driver}, "results": results,
           "invocations": [{"executionSuccessful": result.internal_errors == 0,
                            "toolExecutionNotifications": notifications}]}
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
