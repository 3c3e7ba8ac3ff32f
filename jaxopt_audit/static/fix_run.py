"""`scan --fix` / `--diff`: fix the files whose findings have an allowed fix, then say what changed.

Only files with at least one fixable finding are read again, and only files whose text changed
are written (atomically, keeping their mode). Notebooks are reported but not rewritten: their
cells would have to be written back into the JSON, which this version does not do.
"""

from __future__ import annotations

from typing import NamedTuple

from ..notebook_format import is_ipynb, is_myst
from .config import Config
from .fixes import FixOutcome, allowed, fix_file, write_fixed


class FixSummary(NamedTuple):
    outcomes: list[FixOutcome]  # files whose text changed
    notebooks_left: int  # fixable findings in notebooks, not applied


def fix_paths(result, config: Config, unsafe: bool, write: bool) -> FixSummary:
    rules = [r() for r in result.rules]
    paths = sorted({f.path for f in result.findings if allowed(f.fix_applicability, unsafe)})
    outcomes, notebooks_left = [], 0
    for path in paths:
        if is_ipynb(path) or is_myst(path):
            notebooks_left += sum(1 for f in result.findings
                                  if f.path == path and allowed(f.fix_applicability, unsafe))
            continue
        outcome = fix_file(path, rules, config.ignored_for(path), unsafe)
        if outcome is None or outcome.fixed == outcome.original:
            continue
        if write:
            write_fixed(outcome)
        outcomes.append(outcome)
    return FixSummary(outcomes, notebooks_left)
