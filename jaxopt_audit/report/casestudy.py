"""`jaxopt-audit report`: a markdown case study of a staged rewrite, from bench results JSON.

`run --json` results are a study of the user's own rewrite instead (`run_study`).

One or more results files of the same pipeline (e.g. a CPU run and a GPU run) become one report:
the problem (stage 0 and what the scanner finds in it), a before/after table per run (time,
speedup per stage and cumulative, throughput, compile time, break-even), the runs side by side,
each stage with what changed (rules addressed, findings on its file, findings removed), the
validation, the machines and the method, and two PNG plots written next to the markdown.
The report is rebuilt from the JSON alone when bench recorded the findings (it does by default).
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..exit_codes import UsageError  # noqa: E402
from ..fileio import OutputPathError, check_output_file, write_text_atomic
from ..results import BenchResult, CompileTimes, Scan, StageFinding, StageResult
from . import markdown as md
from .results_check import results_problem

REQUIRED_KEYS = ("pipeline", "size", "platform", "device", "jax_version", "variants")


class ReportError(UsageError):
    """Bad input to `report`: printed as one line, exit status 2."""


@dataclass(frozen=True)
class Run:
    """One results file."""

    path: Path
    result: BenchResult

    @property
    def label(self) -> str:
        return self.result.label

    @property
    def variants(self) -> list[StageResult]:
        return self.result.variants

    def measured(self) -> list[StageResult]:
        return self.result.measured()


def load_runs(paths: Sequence[str]) -> list[Run]:
    runs = []
    for name in paths:
        path = Path(name)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ReportError(f"cannot read {path}: {exc.strerror}; pass a file written by "
                              "`jaxopt-audit bench PIPELINE --out FILE`") from exc
        except json.JSONDecodeError as exc:
            raise ReportError(f"{path} is not JSON (line {exc.lineno}: {exc.msg}); pass a file written by "
                              "`jaxopt-audit bench PIPELINE --out FILE`") from exc
        except (UnicodeDecodeError, ValueError) as exc:  # a binary file, a NUL, a huge number
            raise ReportError(f"{path} is not a JSON text ({type(exc).__name__} at byte "
                              f"{getattr(exc, 'start', '?')}); pass a file written by "
                              "`jaxopt-audit bench PIPELINE --out FILE`") from None
        if isinstance(data, list) and len(data) == 1:
            data = data[0]
        missing = [k for k in REQUIRED_KEYS if not isinstance(data, dict) or k not in data]
        if missing:
            raise ReportError(f"{path} is not a bench result (missing {', '.join(missing)}); pass a file "
                              "written by `jaxopt-audit bench PIPELINE --out FILE`")
        problem = results_problem(data)
        if problem is not None:
            raise ReportError(f"{path} is not a bench result jaxopt-audit can render ({problem}); pass a "
                              "file written by `jaxopt-audit bench PIPELINE --out FILE`")
        runs.append(Run(path, BenchResult.from_json(data)))
    pipelines = sorted({r.result.pipeline for r in runs})
    if len(pipelines) > 1:
        raise ReportError(f"the results are of different pipelines ({', '.join(pipelines)}); "
                          "write one report per pipeline")
    return runs


# ---------------------------------------------------------------- findings

def findings_at_report_time(pipeline: str, module: str, scan: Scan) -> tuple[list[StageFinding] | None, str]:
    """Scan a built-in stage file now, for results written without findings."""
    try:
        spec = importlib.util.find_spec(f"jaxopt_audit.reference_pipelines.{pipeline}.{module}")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None, f"the source of {module} is not available here"
    result = scan([spec.origin])
    return StageFinding.sorted(result.findings), ""


Findings = dict[int, tuple[list[StageFinding] | None, str]]  # stage -> (findings or None, why not)


def findings_by_stage(run: Run, scan: Scan) -> Findings:
    out: Findings = {}
    for variant in run.variants:
        if variant.findings is None:
            findings, why = findings_at_report_time(run.result.pipeline, variant.name, scan)
            out[variant.stage] = (findings, why or variant.findings_note)
        else:
            out[variant.stage] = (variant.findings, "")
    return out


def _codes(findings: list[StageFinding] | None) -> Counter[str]:
    return Counter(f.code for f in findings or [])


def _code_list(codes: Counter[str], names: dict[str, str]) -> str:
    parts = []
    for code in sorted(codes):
        label = f"{code} {names[code]}" if code in names else code
        parts.append(label + (f" ×{codes[code]}" if codes[code] > 1 else ""))
    return ", ".join(parts) if parts else "none"


# ---------------------------------------------------------------- sections

def _paragraph(text: str) -> str:
    """A docstring line as a paragraph: a leading '+' or '-' would otherwise start a list."""
    return "\\" + text if text[:1] in "+-*#>" and text else text


def _results_table(run: Run) -> str:
    rows = []
    for v in run.variants:
        if not v.measured:
            rows.append([v.stage, f"`{v.name}`", ", ".join(v.addresses) or "—", f"failed: {v.error}"] + [""] * 10)
            continue
        assert v.steady_s is not None and v.throughput is not None
        star = "\\*" if v.extrapolated else ""
        if v.break_even is None:
            be = "—" if v.speedup_vs_previous is None or v.stage == 0 else "never"
        elif v.break_even.value == 0:
            be = "immediate"
        else:
            be = f"{md.quantity(v.break_even.value)} {v.break_even.unit}"
        rows.append([
            v.stage, f"`{v.name}`", ", ".join(v.addresses) or "—",
            md.seconds(v.steady_s.median) + star, md.percent(v.steady_s.spread),
            md.speedup(v.speedup_vs_previous), md.speedup(v.speedup_vs_stage0),
            md.quantity(v.throughput.value), md.seconds(v.compile_s),
            md.seconds(v.first_call_s), be, md.count(v.compiles_per_call),
            md.count(v.host_transfers_per_call),
            "ok" if v.valid else "**FAIL**",
        ])
    headers = ["#", "stage", "rules", "time / run", "spread", "speedup", "cumulative",
               f"throughput ({run.result.throughput_unit})", "compile", "first call", "break-even",
               "compiles / call", "transfers / call", "valid"]
    return md.table(headers, rows, "rllrrrrrrrrrrc")


def _side_by_side(runs: list[Run]) -> str:
    stages: dict[int, str] = {}
    for run in runs:
        for v in run.variants:
            stages.setdefault(v.stage, v.name)
    headers = ["#", "stage"]
    for run in runs:
        headers += [f"time: {run.label}", f"cumulative: {run.label}"]
    rows = []
    for stage, name in sorted(stages.items()):
        row: list[object] = [stage, f"`{name}`"]
        for run in runs:
            found = next((x for x in run.measured() if x.stage == stage), None)
            row += ["—", "—"] if found is None else [
                md.seconds(found.median_s) + ("\\*" if found.extrapolated else ""),
                md.speedup(found.speedup_vs_stage0)]
        rows.append(row)
    return md.table(headers, rows, "rl" + "rr" * len(runs))


def _summary(runs: list[Run]) -> list[str]:
    lines = []
    for run in runs:
        measured = run.measured()
        first = next((v for v in measured if v.stage == 0), None)
        last = measured[-1] if measured else None
        if first is None or last is None or last is first:
            lines.append(f"- **{run.label}**: not enough measured stages to compare.")
            continue
        assert first.throughput is not None and last.throughput is not None
        failed = [v.name for v in run.variants if not v.valid]
        lines.append(
            f"- **{run.label}**, `{run.result.size}` workload: the last stage (`{last.name}`) takes "
            f"{md.seconds(last.median_s)} per run against {md.seconds(first.median_s)} "
            f"for the original, **{md.speedup(last.speedup_vs_stage0)} faster** "
            f"({md.quantity(first.throughput.value)} → {md.quantity(last.throughput.value)} "
            f"{run.result.throughput_unit}). "
            + ("Every stage passed validation." if not failed else
               f"**Not valid or failed: {', '.join(failed)}.**"))
    return lines


def _problem(run: Run, findings: Findings) -> list[str]:
    stage0 = run.result.stage(0)
    if stage0 is None:
        return ["Stage 0 was not part of these results."]
    lines = [f"The original code is `{stage0.name}.py`: {stage0.title or ''}".rstrip(": "), ""]
    found, why = findings.get(0, (None, "not recorded"))
    if found is None:
        lines.append(f"_Static findings unavailable: {why}._")
    elif not found:
        lines.append("`jaxopt-audit scan` reports no findings on it.")
    else:
        lines.append(f"`jaxopt-audit scan` reports {len(found)} finding(s) on it (every default rule, "
                     "preview rules too):")
        lines.append("")
        lines.append(md.table(["line", "rule", "severity", "what"],
                              [[f.line, f"{f.code} {f.name}".strip(), f.severity, f.message] for f in found],
                              "rlll"))
    return lines


def _stage_sections(runs: list[Run], findings: Findings, names: dict[str, str]) -> list[str]:
    base = runs[0]
    lines: list[str] = []
    previous_codes: Counter[str] | None = None
    for v in base.variants:
        stage = v.stage
        lines += [f"### Stage {stage}: `{v.name}`", "", _paragraph(v.title or ""), ""]
        if v.addresses:
            lines.append(f"- **Addresses:** {_code_list(Counter(v.addresses), names)}")
        if v.changes_math:
            lines.append(f"- **Changes the math:** {v.math_note or 'yes'}")
        found, why = findings.get(stage, (None, ""))
        if found is None:
            lines.append(f"- **Scanner findings:** unavailable ({why})")
            previous_codes = None
        else:
            codes = _codes(found)
            lines.append(f"- **Scanner findings on this file:** {len(found)} ({_code_list(codes, names)})")
            if previous_codes is not None:
                removed, added = previous_codes - codes, codes - previous_codes
                lines.append(f"- **Removed since the previous stage:** {_code_list(removed, names)}"
                             + (f"; new: {_code_list(added, names)}" if added else ""))
            previous_codes = codes
        for run in runs:
            r = run.result.stage(stage)
            prefix = f"{run.label}: " if len(runs) > 1 else ""
            if r is None:
                continue
            if not r.measured:
                lines.append(f"- **{prefix}failed:** {r.error}")
                continue
            lines += _measured_lines(r, prefix)
        lines.append("")
    return lines


def _measured_lines(r: StageResult, prefix: str) -> list[str]:
    assert r.steady_s is not None and r.validation is not None
    compile_parts = r.compile or CompileTimes()
    extrapolated = (f", measured on {md.share(r.prefix_fraction)} of the work and extrapolated"
                    if r.extrapolated and r.prefix_fraction is not None else "")
    lines = [
        f"- **{prefix}Measured:** {md.seconds(r.steady_s.median)} per run "
        f"(min {md.seconds(r.steady_s.min)}, max {md.seconds(r.steady_s.max)}, "
        f"{r.steady_s.repeats} runs{extrapolated}); {md.speedup(r.speedup_vs_previous)} "
        f"vs the previous stage, {md.speedup(r.speedup_vs_stage0)} vs stage 0; compilation "
        f"{md.seconds(r.compile_s)} (trace {md.seconds(compile_parts.trace_s)}, lower "
        f"{md.seconds(compile_parts.lower_s)}, "
        f"XLA {md.seconds(compile_parts.backend_compile_s)}, "
        f"{'?' if compile_parts.compiles is None else compile_parts.compiles} programs); "
        f"{md.count(r.compiles_per_call)} compilations "
        f"and {md.count(r.host_transfers_per_call)} host transfers per steady-state run "
        f"({md.count(r.h2d_transfers_per_call)} to the device, "
        f"{md.count(r.d2h_transfers_per_call)} back)."]
    if r.recompiled:
        lines.append(f"  Recompiles in steady state: {', '.join(r.recompiled)}.")
    validation = r.validation
    lines.append(
        f"- **{prefix}Validation:** {validation.metric} = {md.quantity(validation.value)} "
        f"(tolerance {md.quantity(validation.tolerance)}): "
        f"{'ok' if validation.ok else '**FAILED**'}"
        + (f"; {validation.detail}" if validation.detail else ""))
    if r.flops_per_s:
        bound = "at least " if (r.cost or {}).get("lower_bound") else ""
        lines.append(f"- **{prefix}Achieved:** {bound}{md.quantity(r.flops_per_s)}FLOP/s, "
                     f"{bound}{md.quantity(r.bytes_per_s)}B/s (XLA cost analysis).")
    if r.trace:
        top = r.trace["summary"]["top_ops"][:5]
        ops = ", ".join(f"`{op['name']}` {md.seconds(op['total_s'])}" for op in top) or "none"
        lines.append(f"- **{prefix}Trace:** `{r.trace['path']}`; top XLA ops: {ops}.")
    return lines


def _validation_table(runs: list[Run]) -> str:
    rows = []
    for run in runs:
        for v in run.variants:
            if not v.measured or v.validation is None:
                rows.append([run.label, f"`{v.name}`", "—", "—", "—", "failed", v.error or ""])
                continue
            val = v.validation
            rows.append([run.label, f"`{v.name}`", val.metric, md.quantity(val.value),
                         md.quantity(val.tolerance), "ok" if val.ok else "**FAIL**", val.detail])
    return md.table(["run", "stage", "metric", "value", "tolerance", "result", "detail"], rows, "lllrrcl")


def _machines(runs: list[Run]) -> list[str]:
    lines = []
    for run in runs:
        result, m = run.result, run.result.machine
        lines.append(
            f"- **{run.label}** (`{run.path.name}`, {result.created or 'date unknown'}): "
            f"{m.get('platform', result.platform)} device `{m.get('device', result.device)}`"
            f" ×{m.get('device_count', 1)}; CPU {m.get('cpu_model', '?')} ({m.get('cpu_count', '?')} cores); "
            f"JAX {result.jax_version}, jaxlib {m.get('jaxlib_version', '?')}; Python "
            f"{m.get('python_version', '?')}; {m.get('os', '')}. Harness overhead "
            f"{md.seconds(result.harness_overhead_s)} per timed call.")
    return lines


METHOD = """\
Each stage's `run(workload)` does the whole job and is called by `jaxopt-audit bench`, never timed by
itself. The first call is timed on its own; the trace, lowering and XLA compilation inside it are the
durations JAX reports through `jax.monitoring`. A warm-up call then counts host transfers: host-to-device
from jaxlib's transfer-guard log, device-to-host from the Python entry points that read a `jax.Array`
on the host. Steady state is the median of repeated calls, each synchronised with
`jax.block_until_ready` before the clock is read; a compilation during those calls is reported as a
recompilation. *Speedup* is the previous stage's median over this one's, *cumulative* stage 0's over
this one's, on the same workload. *Break-even* is how much work (in the throughput unit) this stage must
do before its extra first-call cost (mostly compilation) is paid back by its faster steady state against
the previous stage. Times marked \\* were measured on a prefix of the work and scaled linearly by the
work done; their validation compares with stage 0 on the same prefix. FLOP/s come from XLA's compiled
cost analysis and exist only for stages whose `run` is itself one jitted program; XLA counts a loop body
once, so with `scan`/`fori_loop` they are lower bounds."""


def render(runs: list[Run], plot_files: dict[str, str], output_name: str | None = None, *, scan: Scan,
           names: dict[str, str]) -> str:
    base = runs[0].result
    output_name = output_name or f"{base.pipeline}.md"
    findings = findings_by_stage(runs[0], scan)
    for run in runs[1:]:  # findings are per file: any run that recorded them fills gaps
        for stage, (found, why) in findings_by_stage(run, scan).items():
            if findings.get(stage, (None, ""))[0] is None and found is not None:
                findings[stage] = (found, why)
    for f_list, _ in findings.values():
        for f in f_list or []:
            names.setdefault(f.code, f.name)

    sources = ", ".join(f"`{r.path.name}`" for r in runs)
    out = [f"# {base.title or base.pipeline}", "",
           f"_Pipeline `{base.pipeline}`, generated by `jaxopt-audit report` from {sources}._", ""]
    if base.description:
        out += [base.description, ""]
    out += ["## Summary", "", *_summary(runs), ""]
    out += ["## The problem", "", *_problem(runs[0], findings), ""]
    for run in runs:
        heading = f"## Results: {run.label}" if len(runs) > 1 else "## Results"
        out += [heading, "", f"Workload `{run.result.size}`; times are per run of the whole workload "
                f"(median of synchronised calls).", "", _results_table(run), ""]
        if any(v.extrapolated for v in run.variants):
            out += ["\\* measured on a prefix of the work and extrapolated linearly.", ""]
    if len(runs) > 1:
        out += ["## Side by side", "", _side_by_side(runs), ""]
    out += ["## Plots", ""]
    for title, key in (("Time per stage (log scale)", "time"), ("Throughput per stage", "throughput")):
        if key in plot_files:
            out += [f"![{title}]({plot_files[key]})", ""]
    out += ["## Stage by stage", "", *_stage_sections(runs, findings, names)]
    out += ["## Validation", "", _validation_table(runs), ""]
    out += ["## Machines", "", *_machines(runs), ""]
    out += ["## How this was measured", "", METHOD, ""]
    out += ["## Reproduce", "", "```sh"]
    for run in runs:  # each bench writes the very file the report command below reads
        source = run.result.pipeline_path or base.pipeline
        out.append(f"jaxopt-audit bench {source} --size {run.result.size} --out {run.path.name}")
    out.append(f"jaxopt-audit report {' '.join(r.path.name for r in runs)} -o {output_name}")
    out += ["```", ""]
    return "\n".join(out)


def write_report(result_paths: Sequence[str], output: str | None = None, *, scan: Scan,
                 names: dict[str, str]) -> tuple[Path, list[Path]]:
    """Write the markdown and its plots; return their paths."""
    from . import plots  # matplotlib: the runtime extra, loaded only to draw

    runs = load_runs(result_paths)
    pipeline = runs[0].result.pipeline
    md_path = Path(output) if output else Path("reports") / f"{pipeline}.md"
    # before rendering and plotting: the markdown and its two PNGs must all be writable
    try:
        for path in (md_path, md_path.with_name(f"{md_path.stem}-time.png"),
                     md_path.with_name(f"{md_path.stem}-throughput.png")):
            check_output_file(path, "-o" if output else "the report")
    except OutputPathError as exc:
        raise ReportError(str(exc)) from None
    labels = [r.label for r in runs]
    plot_paths = {
        "time": plots.time_plot([r.result for r in runs], labels, md_path.with_name(f"{md_path.stem}-time.png")),
        "throughput": plots.throughput_plot([r.result for r in runs], labels,
                                            md_path.with_name(f"{md_path.stem}-throughput.png")),
    }
    text = render(runs, {k: p.name for k, p in plot_paths.items()}, md_path.name, scan=scan, names=names)
    write_text_atomic(md_path, text)
    return md_path, list(plot_paths.values())
