"""What a rule is: metadata, documentation, embedded examples, and a check over the model.

A rule is one class in one file under `rules/` (Fixit's shape). Its docstring is its
documentation, in ruff's sections (`## What it does`, `## Why is this bad?`, `## How to fix`,
`## Measured`, `## References`); its `INVALID` and `VALID` examples are both the tests and the
"Example" / "Use instead" sections that `jaxopt-audit rule CODE` prints. An INVALID example marks
each line that must be reported with a trailing `# <- CODE` comment.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, NamedTuple

import libcst as cst

if TYPE_CHECKING:
    from ...notebook_format import Cell
    from ..model import SemanticModel

SEVERITIES = ("error", "warning", "info")
_MARK = re.compile(r"#\s*<-\s*((?:JAX\d{3}[ ,]*)+)")
CODE_PATTERN = re.compile(r"^[A-Z]+\d{3}$")


# most impactful first; `unknown` (a loop the file does not count: a data loader, `while True`)
# ranks below what the file shows to run 50 times and above what it shows to run fewer
IMPACT_LEVELS = ("high", "medium", "unknown", "low")


class Impact(NamedTuple):
    """What the code shows about how much a finding matters: `runs`, the times its code runs (None
    when the file cannot say), and `why`, the evidence in words. The level is a ranking, not a
    measurement: `jaxopt-audit run` measures what it costs."""

    level: str  # one of IMPACT_LEVELS
    runs: int | None
    why: str

    def as_dict(self) -> dict:
        return {"level": self.level, "runs": self.runs, "why": self.why}

    def at_most_medium(self, why: str | None) -> Impact:
        """`high` lowered to `medium` when the finding's cost has a ceiling (`why`)."""
        if why is None or self.level != "high":
            return self
        return Impact("medium", self.runs, f"{self.why}; {why}")

    def rank(self) -> int:
        return IMPACT_LEVELS.index(self.level)


class Finding(NamedTuple):
    """One reported problem; field order is the sort order (path, line, column, code)."""

    path: str
    line: int
    column: int
    code: str
    end_line: int
    end_column: int
    name: str
    severity: str
    message: str
    fix: str
    cell: int | None = None  # notebooks: the cell (1-based); line/column are then inside it
    fix_applicability: str | None = None  # "safe" | "unsafe" | None (no automatic fix)
    impact: Impact | None = None

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code, self.end_line,
                self.end_column, self.message)

    def as_dict(self) -> dict:
        data = {"path": self.path, "line": self.line, "column": self.column,
                "end_line": self.end_line, "end_column": self.end_column, "code": self.code,
                "name": self.name, "severity": self.severity, "message": self.message,
                "fix": self.fix, "fix_applicability": self.fix_applicability}
        if self.impact is not None:
            data["impact"] = self.impact.as_dict()
        if self.cell is not None:
            data["cell"] = self.cell
        return data


@dataclass(frozen=True)
class Report:
    """What a check yields: the node to point at, and what to say."""

    node: cst.CSTNode
    message: str
    fix: str | None = None  # None: the rule's default FIX
    severity: str | None = None  # None: the rule's SEVERITY
    # where the cost is paid, when the node pointed at is elsewhere (a growth inside a jitted
    # function whose cost is a compilation per call of a loop): impact counts the runs there
    runs_at: cst.CSTNode | None = None
    # why the cost has a ceiling whatever the run count (a read behind a large compiled step
    # waits for work the next step would wait for anyway): impact says `medium` at most
    bounded: str | None = None


@dataclass(frozen=True)
class Fix:
    """What a rule's `fix` hook returns: nodes to replace, and one line saying what changes."""

    applicability: str  # SAFE | UNSAFE
    # the node and what replaces it (a FlattenSentinel: several statements for one)
    replacements: tuple[tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel], ...]
    description: str


@dataclass(frozen=True)
class Example:
    code: str
    note: str = ""
    # INVALID only: the text after `scan --fix --unsafe-fixes` with this rule alone; the example
    # tests check it, so every fix a rule offers is shown and proved on its own examples
    fixed: str | None = None

    @property
    def source(self) -> str:
        return textwrap.dedent(self.code).strip("\n") + "\n"

    @property
    def fixed_source(self) -> str | None:
        return None if self.fixed is None else textwrap.dedent(self.fixed).strip("\n") + "\n"

    def expected(self) -> list[tuple[int, str]]:
        """(line, code) pairs marked with `# <- CODE` in the example."""
        out: list[tuple[int, str]] = []
        for number, line in enumerate(self.source.splitlines(), start=1):
            match = _MARK.search(line)
            if match:
                out.extend((number, c) for c in re.findall(r"JAX\d{3}", match.group(1)))
        return sorted(out)


class Valid(Example):
    """Code the rule must stay quiet on."""


class Invalid(Example):
    """Code the rule must report, at the lines marked `# <- CODE`."""


class Rule:
    """Base class. Subclasses set the metadata and implement `check`."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]  # kebab-case, stable
    SEVERITY: ClassVar[str]  # "error" | "warning" | "info"
    SUMMARY: ClassVar[str]  # one line, for `rules` and SARIF shortDescription
    FIX: ClassVar[str]  # the default suggested fix, one sentence
    # False: an opt-in rule, run only when selected by its exact code (or ALL), e.g. advice that
    # is right but not worth everyone's default output (README, "The rules")
    DEFAULT: ClassVar[bool] = True
    # True: a preview rule, off by default: a heuristic whose judged precision on held-out real
    # repositories is below the bar for default output (docs/rules.md, "Preview"). The selector
    # `PREVIEW` turns all of them on: `--extend-select PREVIEW`.
    PREVIEW: ClassVar[bool] = False
    # what makes a finding of this rule matter (static/pipeline/impact.py): "per-run", a cost paid each
    # time the code runs, so the loops around it rank it; "correctness", wrong numbers or a
    # failure under jit, whatever the count; "api", an API that is deprecated or removed;
    # "measurement", a timing that reports the wrong number
    IMPACT: ClassVar[str] = "per-run"
    # whether check() asks the model's analysed facts (jitted and traced functions, arrays, step
    # loops, other modules' summaries); False: only names, imports and the syntax tree, and a scan
    # running no other rule builds the model without its fixpoints and skips the project pass
    ANALYSIS: ClassVar[bool] = True
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def check(self, model: SemanticModel) -> Iterable[Report]:
        raise NotImplementedError

    def demonstrated(self, finding: Finding, cell: Cell) -> bool:
        """The notebook cell holding `finding` shows its mistake on purpose, as tutorials do: its
        saved outputs show it happen, or the prose around it says so (static/model/demonstrations.py).
        Such a finding is dropped. Rules whose mistake a tutorial demonstrates override this."""
        return False

    def fix(self, model: SemanticModel, report: Report) -> Fix | None:
        """The automatic fix for one of this rule's reports (a codemod, static/autofix/apply.py), or None.
        Rules that fix override this; the engine asks only for reports it keeps."""
        return None

    @classmethod
    def tier(cls) -> str:
        """"on" (default output), "preview" (with `PREVIEW`) or "opt-in" (by exact code or ALL)."""
        return "preview" if cls.PREVIEW else "on" if cls.DEFAULT else "opt-in"

    # ---------------------------------------------------------------- documentation
    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def markdown(cls) -> str:
        """The rule's page: docstring sections plus its first examples, as `rule CODE` prints it."""
        parts = [f"# {cls.CODE} {cls.NAME} ({cls.SEVERITY})", "", cls.SUMMARY, "", cls.doc()]
        if cls.INVALID:
            parts += ["", "## Example", "```python", cls.INVALID[0].source.rstrip(), "```"]
        fixed = next((e for e in cls.INVALID if e.fixed is not None), None)
        if fixed is not None:
            parts += ["", "## Fix", "`scan --fix` (with `--unsafe-fixes` where the fix is unsafe) turns", "",
                      "```python", fixed.source.rstrip(), "```", "", "into", "",
                      "```python", (fixed.fixed_source or "").rstrip(), "```"]
        if cls.VALID:
            parts += ["", "## Use instead", "```python", cls.VALID[0].source.rstrip(), "```"]
        return "\n".join(parts).strip() + "\n"

    @classmethod
    def validate_metadata(cls) -> list[str]:
        problems = []
        for attribute in ("CODE", "NAME", "SEVERITY", "SUMMARY", "FIX"):
            if not getattr(cls, attribute, None):
                problems.append(f"{cls.__name__}: missing {attribute}")
        if getattr(cls, "CODE", None) and not CODE_PATTERN.match(cls.CODE):
            problems.append(f"{cls.__name__}: code {cls.CODE!r} is not like JAX123")
        if getattr(cls, "SEVERITY", None) not in SEVERITIES:
            problems.append(f"{cls.__name__}: severity must be one of {SEVERITIES}")
        doc = cls.doc()
        for section in ("## What it does", "## Why is this bad?", "## How to fix"):
            if section not in doc:
                problems.append(f"{cls.CODE}: docstring lacks '{section}'")
        return problems
