"""`jaxopt-audit report before.json after.json`: the case study of a user's own rewrite.

The inputs are `jaxopt-audit run --json` results of two or more versions of one program, in the
order they were written. The study has one column per run (time split, compilations, transfers,
findings), the speedups between consecutive runs and against the first, the findings each
rewrite removed and added, a plot of the time split, and the commands that reproduce it.
Reads the JSON only: no JAX, no scanner.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import markdown as md

RUN_KEYS = ("argv", "exit_status", "wall_s", "compile_s", "functions", "transfers", "findings")


@dataclass(frozen=True)
class RunResult:
    """One `run --json` file."""

    path: Path
    data: dict[str, Any]

    @property
    def label(self) -> str:
        return self.path.stem

    @property
    def command(self) -> str:
        return " ".join(self.data["argv"])

    @property
    def wall_s(self) -> float:
        return float(self.data["wall_s"])

    def part(self, key: str) -> float:
        split = self.data.get("time_split") or {}
        return float(split.get(key, self.data.get(key)) or 0.0)

    @property
    def compiles(self) -> int:
        return sum(f["compiles"] for f in self.data["functions"]) + int(self.data.get("eager_compiles") or 0)

    def moved(self, direction: str) -> int:
        return sum(t["count"] for t in self.data["transfers"] if t["direction"] == direction)

    def codes(self) -> Counter[str]:
        return Counter(f["code"] for f in self.data["findings"])


def is_run_result(data: object) -> bool:
    return isinstance(data, dict) and all(key in data for key in RUN_KEYS)


def load(paths: Sequence[str]) -> list[RunResult] | None:
    """The runs when every file is a `run --json` result; None when none is (bench results)."""
    loaded: list[tuple[Path, object]] = []
    for name in paths:
        path = Path(name)
        try:
            loaded.append((path, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            return None  # the bench reader says what is wrong with the file
    kinds = [is_run_result(data) for _, data in loaded]
    if not any(kinds):
        return None
    if not all(kinds):
        from .casestudy import ReportError

        mixed = ", ".join(str(p) for (p, _), k in zip(loaded, kinds, strict=True) if not k)
        raise ReportError(f"{mixed}: not a `jaxopt-audit run --json` result while the other files are; "
                          "give run results only (one study of your rewrite) or bench results only")
    return [RunResult(path, data) for path, data in loaded]  # type: ignore[arg-type]


def _speedup(before: float, after: float) -> float | None:
    return before / after if after > 0 else None


def _steady(run: RunResult) -> float:
    """Wall time without compilation: what a longer run of the same program pays per unit."""
    return max(run.wall_s - run.part("compile_s"), 0.0)


def _summary(runs: list[RunResult]) -> list[str]:
    first, last = runs[0], runs[-1]
    lines = [f"- **{r.label}**: `{r.command}` took {md.seconds(r.wall_s)} (compile {md.seconds(r.part('compile_s'))}, "
             f"device {md.seconds(r.part('device_s'))}, host {md.seconds(r.part('host_s'))}); "
             f"{len(r.data['findings'])} runtime finding(s)"
             + ("" if r.data["exit_status"] == 0 else f"; **exit status {r.data['exit_status']}**") + "."
             for r in runs]
    if len(runs) > 1:
        lines.append(f"- **{last.label}** against **{first.label}**: {md.speedup(_speedup(first.wall_s, last.wall_s))} "
                     f"on the wall time, {md.speedup(_speedup(_steady(first), _steady(last)))} without "
                     f"compilation; findings {len(first.data['findings'])} → {len(last.data['findings'])}.")
    return lines


def _table(runs: list[RunResult]) -> str:
    def row(name: str, values: Sequence[object]) -> list[object]:
        return [name, *values]

    rows = [
        row("command", [f"`{r.command}`" for r in runs]),
        row("wall", [md.seconds(r.wall_s) for r in runs]),
        row("compile", [md.seconds(r.part("compile_s")) for r in runs]),
        row("device", [md.seconds(r.part("device_s")) for r in runs]),
        row("host", [md.seconds(r.part("host_s")) for r in runs]),
        row("speedup vs previous", ["—"] + [md.speedup(_speedup(a.wall_s, b.wall_s))
                                             for a, b in zip(runs, runs[1:], strict=False)]),
        row(f"speedup vs {runs[0].label}", ["—"] + [md.speedup(_speedup(runs[0].wall_s, r.wall_s)) for r in runs[1:]]),
        row("jitted functions (calls)", [f"{len(r.data['functions'])} ({sum(f['calls'] for f in r.data['functions'])})"
                                         for r in runs]),
        row("eager ops", [str(r.data.get("eager_ops", "?")) for r in runs]),
        row("compilations (eager)", [f"{r.compiles} ({r.data.get('eager_compiles', 0)})" for r in runs]),
        row("host → device arrays", [str(r.moved("h2d")) for r in runs]),
        row("device → host reads", [str(r.moved("d2h")) for r in runs]),
        row("syncs", [str(r.moved("sync")) for r in runs]),
        row("findings", [", ".join(f"{c} ×{n}" for c, n in sorted(r.codes().items())) or "none" for r in runs]),
    ]
    return md.table(["", *[f"**{r.label}**" for r in runs]], rows, "l" + "r" * len(runs))


def _place(finding: dict[str, Any]) -> tuple[str, str, int]:
    return finding["code"], Path(finding["path"]).name, int(finding["line"])


def _about(finding: dict[str, Any]) -> tuple[str, str, str] | None:
    function = finding.get("function")
    return (finding["code"], Path(finding["path"]).name, function) if function else None


def match(before: list[dict[str, Any]], after: list[dict[str, Any]]
          ) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(remaining pairs, removed, added): one problem in both runs has the same code in the same
    file and, first, the same line, else the same function (a rewrite moves lines)."""
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    left_before, left_after = list(before), list(after)
    for key in (_place, _about):
        unmatched = []
        for finding in left_before:
            partner = next((other for other in left_after
                            if key(finding) is not None and key(other) == key(finding)), None)
            if partner is None:
                unmatched.append(finding)
            else:
                pairs.append((finding, partner))
                left_after.remove(partner)
        left_before = unmatched
    return pairs, left_before, left_after


def _cost(finding: dict[str, Any]) -> str:
    cost = finding.get("cost_s")
    return md.seconds(cost) if cost is not None else "not measured"


def _function_now(run: RunResult, function: str | None) -> str:
    """What the function a removed problem was about costs in the later run."""
    if not function:
        return "gone"
    for jitted in run.data["functions"]:
        if jitted["name"] == function:
            return (f"`{function}` jitted: {jitted['calls']} calls, compile {md.seconds(jitted['compile_s'])}, "
                    f"device {md.seconds(jitted['exec_s'])}")
    for eager in run.data.get("eager_functions") or ():
        if eager["name"] == function:
            return f"`{function}` still op by op: {md.seconds(eager['op_s'] + eager['compile_s'])} in its ops"
    return f"`{function}` not seen"


def _problem(finding: dict[str, Any]) -> str:
    about = f" `{finding['function']}`" if finding.get("function") else ""
    return f"{finding['code']} {finding.get('name', '')}{about} at `{Path(finding['path']).name}:{finding['line']}`"


def _changes(runs: list[RunResult]) -> list[str]:
    lines: list[str] = []
    for before, after in zip(runs, runs[1:], strict=False):
        remaining, removed, added = match(before.data["findings"], after.data["findings"])
        lines += [f"### {before.label} → {after.label}", ""]
        lines += [f"- **Removed:** {_problem(f)}: cost {_cost(f)} in {before.label}; in {after.label}: "
                  f"{_function_now(after, f.get('function'))}" for f in removed] or ["- **Removed:** none"]
        lines += [f"- **Remaining:** {_problem(a)}: cost {_cost(b)} → {_cost(a)}"
                  for b, a in remaining] or ["- **Remaining:** none"]
        lines += [f"- **Added:** {_problem(f)}: cost {_cost(f)}" for f in added] or ["- **Added:** none"]
        lines += [f"- **Speedup:** {md.speedup(_speedup(before.wall_s, after.wall_s))} on the wall time "
                  f"({md.seconds(before.wall_s)} → {md.seconds(after.wall_s)}), "
                  f"{md.speedup(_speedup(_steady(before), _steady(after)))} without compilation.", ""]
    return lines


def _findings(run: RunResult) -> list[str]:
    found = run.data["findings"]
    if not found:
        return ["No runtime findings.", ""]
    rows = [[f"{f['code']} {f.get('name', '')}".strip(), f"`{f['path']}:{f['line']}`", f.get("count", ""),
             f["message"]] for f in found]
    return [md.table(["rule", "where", "count", "what"], rows, "llrl"), ""]


METHOD = """\
Each column is one `jaxopt-audit run --json` of a version of the program. The wall time is split on the
program thread's clock: *compile* is the trace, lowering and XLA compilation JAX reports through
`jax.monitoring` in the program's thread, *device* the time the program waited in jitted calls (their
compilation excluded), host reads and syncs, *host* the rest: the program's own Python, eager op dispatch
included. *Speedup* is the earlier run's wall time over the later one's; "without compilation" compares
wall minus compile, what a longer run of the same program would gain per step. A problem remains when the
later run has a finding of the same rule in the same file at the same line or, failing that, about the
same function (a rewrite moves lines); it is removed when it has none. A removed problem's function is
looked up in the later run: what it costs there, jitted or still op by op."""


def render(runs: list[RunResult], plot_file: str | None, output_name: str) -> str:
    sources = ", ".join(f"`{r.path.name}`" for r in runs)
    out = [f"# Case study: {Path(runs[0].data['argv'][0]).name}", "",
           f"_Generated by `jaxopt-audit report` from {sources} (`jaxopt-audit run --json` results)._", "",
           "## Summary", "", *_summary(runs), "", "## Runs side by side", "", _table(runs), ""]
    if plot_file:
        out += ["## Plot", "", f"![Time split per run]({plot_file})", ""]
    if len(runs) > 1:
        out += ["## What each rewrite changed", "", *_changes(runs)]
    for run in runs:
        out += [f"## Findings: {run.label}", "", *_findings(run)]
    out += ["## How this was measured", "", METHOD, "", "## Reproduce", "", "```sh"]
    for run in runs:
        out.append(f"jaxopt-audit run --json {run.path.name} {run.command}")
    out.append(f"jaxopt-audit report {' '.join(r.path.name for r in runs)} -o {output_name}")
    out += ["```", ""]
    return "\n".join(out)


def default_output(runs: list[RunResult]) -> Path:
    return Path("reports") / f"{Path(runs[0].data['argv'][0]).stem}-rewrite.md"


def write_study(runs: list[RunResult], output: str | None) -> tuple[Path, list[Path]]:
    """Write the markdown and its plot; return their paths."""
    from ..fileio import OutputPathError, check_output_file, write_text_atomic
    from . import plots
    from .casestudy import ReportError

    md_path = Path(output) if output else default_output(runs)
    try:  # before plotting: the markdown and its PNG must both be writable
        for path in (md_path, md_path.with_name(f"{md_path.stem}-time.png")):
            check_output_file(path, "-o" if output else "the report")
    except OutputPathError as exc:
        raise ReportError(str(exc)) from None
    plot = plots.run_split_plot([(r.label, r.part("compile_s"), r.part("device_s"), r.part("host_s"))
                                 for r in runs], md_path.with_name(f"{md_path.stem}-time.png"))
    text = render(runs, plot.name, md_path.name)
    write_text_atomic(md_path, text)
    return md_path, [plot]
