"""`scan --fix` / `--diff`: fix the files whose findings have an allowed fix, then say what changed.

Only files with at least one fixable finding are read again, and only files whose text changed
are written (atomically, keeping their mode). A .ipynb notebook is fixed cell by cell
(notebook_fixes.py) when it can be written back without reformatting; MyST notebooks are not
rewritten. What is not rewritten is counted as left, with the reason.
"""

from __future__ import annotations

from typing import NamedTuple

from ...notebook_format import is_ipynb, is_myst
from ..framework.fix import allowed
from ..framework.results import ScanSource
from ..pipeline.config import Config
from .apply import FixOutcome, fix_file, write_fixed
from .notebook import fix_notebook


class FixSummary(NamedTuple):
    outcomes: list[FixOutcome]  # files whose text changed
    notebooks_left: int  # fixable findings in notebooks, not applied
    reasons: list[str]  # `path: why it was left`


def fix_paths(result, config: Config, unsafe: bool, write: bool, scan: ScanSource) -> FixSummary:
    rules = [r() for r in result.rules]
    paths = sorted({f.path for f in result.findings if allowed(f.fix_applicability, unsafe)})
    outcomes, notebooks_left, reasons = [], 0, []
    for path in paths:
        reason = None
        if is_ipynb(path):
            outcome, reason = fix_notebook(path, rules, config.ignored_for(path), unsafe, scan=scan)
        elif is_myst(path):
            outcome, reason = None, "MyST notebooks are not rewritten"
        else:
            outcome = fix_file(path, rules, config.ignored_for(path), unsafe, scan=scan)
        if reason is not None:
            notebooks_left += sum(1 for f in result.findings
                                  if f.path == path and allowed(f.fix_applicability, unsafe))
            reasons.append(f"{path}: not fixed: {reason}")
        if outcome is None or outcome.fixed == outcome.original:
            continue
        if write:
            write_fixed(outcome)
        outcomes.append(outcome)
    return FixSummary(outcomes, notebooks_left, reasons)
