"""`jaxopt-audit bench`: arguments, progress, the results table and the JSON files.

The measuring itself is runtime/bench/harness.py (`run_pipeline`); this module only turns the
command line into its calls and its results into output.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..exit_codes import FINDINGS as EXIT_FAILED  # noqa: E402
from ..exit_codes import OK as EXIT_OK  # noqa: E402
from ..exit_codes import USAGE as EXIT_USAGE  # noqa: E402
from ..exit_codes import UsageError
from ..fileio import OutputPathError, check_output_dir, check_output_file, write_json_atomic
from ..results import BenchResult
from ..runtime.bench.harness import BenchOptions, resolve_pipeline, run_pipeline, select_stages
from ..runtime.bench.pipeline import PIPELINE_NAMES, Pipeline, load_pipeline
from ..static.pipeline.engine import scan_for_report
from ..units import quantity, seconds, speedup


def results_table(results: BenchResult) -> Any:
    """A rich Table of one pipeline's results."""
    table = Table(title=f"{results.pipeline} ({results.size}) on {results.platform}: {results.device}",
                  caption=f"* measured on a prefix and extrapolated · JAX {results.jax_version}")
    for column in ("stage", "rules", "compile", "time/run", "spread", "x stage0", "x prev",
                   results.throughput_unit, "compiles/call", "transfers/call", "valid", "findings"):
        table.add_column(column, justify="left" if column in ("stage", "rules") else "right",
                         no_wrap=column in ("stage", "time/run"))
    for v in results.variants:
        if not v.measured:
            table.add_row(f"{v.stage} {v.name}", ",".join(v.addresses), f"[red]error: {v.error}[/red]", *([""] * 9))
            continue
        assert v.steady_s is not None and v.throughput is not None and v.compiles_per_call is not None
        table.add_row(
            f"{v.stage} {v.name}", ",".join(v.addresses) or "—",
            seconds(v.compile_s), seconds(v.steady_s.median) + ("*" if v.extrapolated else ""),
            "—" if v.steady_s.spread is None else f"{v.steady_s.spread:.0%}",
            speedup(v.speedup_vs_stage0), speedup(v.speedup_vs_previous),
            quantity(v.throughput.value),
            f"{v.compiles_per_call:g}",
            "?" if v.host_transfers_per_call is None else str(v.host_transfers_per_call),
            "[green]ok[/green]" if v.valid else "[red]FAIL[/red]",
            "—" if v.findings is None else str(len(v.findings)),
        )
    return table


def _stdout_console() -> Any:
    console = Console()
    # a file or a pipe has no terminal width to respect: do not squeeze the table into 80 columns
    return console if console.is_terminal else Console(width=170)


def list_pipelines(fmt: str) -> int:
    rows: list[dict[str, Any]] = []
    for name in PIPELINE_NAMES:
        try:
            pipeline = load_pipeline(name)
            rows.append({"name": name, "title": pipeline.title, "sizes": list(pipeline.sizes),
                         "throughput_unit": pipeline.throughput_unit,
                         "stages": [{"index": i, "module": s.module, "addresses": list(s.addresses),
                                     "changes_math": s.changes_math,
                                     "full_size_prefix": s.full_size_prefix}
                                    for i, s in enumerate(pipeline.stages)]})
        except Exception as exc:  # a pipeline still being written must not hide the others
            rows.append({"name": name, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]})
    if fmt == "json":
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    table = Table(title="reference pipelines")
    for column in ("pipeline", "stages (rules addressed)", "sizes", "throughput"):
        table.add_column(column)
    for row in rows:
        if "error" in row:
            table.add_row(row["name"], f"[red]unavailable: {row['error']}[/red]", "", "")
            continue
        stages = "\n".join(f"{s['index']} {s['module']}" + (f" ({', '.join(s['addresses'])})" if s["addresses"] else "")
                           for s in row["stages"])
        table.add_row(f"{row['name']}\n[dim]{row['title']}[/dim]", stages, ", ".join(row["sizes"]),
                      row["throughput_unit"])
    _stdout_console().print(table)
    return EXIT_OK


class _ProgressView:
    """A rich progress bar on stderr, refreshed only between calls (never inside a measured window)."""

    def __init__(self, pipeline: Pipeline, n_stages: int) -> None:
        self.console = Console(stderr=True)
        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[phase]}"), TimeElapsedColumn(),
                                 console=self.console, auto_refresh=False, transient=False)
        self.task = self.progress.add_task(pipeline.name, total=n_stages, phase="")

    def __enter__(self) -> _ProgressView:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "stage":
            self.progress.update(self.task, phase=f"{info['module']}: starting")
        elif kind == "progress":
            total = info["total"]
            count = f" {info['done']}/{total}" if total else (f" {info['done']}" if info["done"] else "")
            self.progress.update(self.task, phase=f"{info['module']}: {info['phase']}{count}")
        elif kind in ("validate", "reference"):
            self.progress.update(self.task, phase=f"{info.get('module', info.get('stage'))}: {kind}")
        elif kind == "trace":
            self.progress.console.print(info["trace"]["text"], highlight=False, markup=False)
        elif kind == "done":
            variant = info["variant"]
            if variant.failed:
                self.progress.console.print(f"[red]{variant.name}: {variant.error}[/red]")
            self.progress.advance(self.task)
        self.progress.refresh()


class _PlainProgress:
    """One line per stage on stderr when it is a file or a pipe, where a live bar shows nothing
    until it stops: a log cut short by a time limit still says which stage took the time."""

    def __init__(self, pipeline: Pipeline, n_stages: int) -> None:
        self.pipeline = pipeline.name
        self.started = 0.0

    def __enter__(self) -> _PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __call__(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "stage":
            self.started = time.perf_counter()
            self._line(f"stage {info['position'] + 1}/{info['total']} {info['module']}: measuring")
        elif kind == "done":
            variant = info["variant"]
            took = f"{time.perf_counter() - self.started:.1f} s"
            if variant.failed:
                self._line(f"{variant.name}: failed after {took}: {variant.error}")
            else:
                assert variant.steady_s is not None
                self._line(f"{variant.name}: done in {took} ({seconds(variant.steady_s.median)} per run"
                           f"{', extrapolated' if variant.extrapolated else ''})")
        elif kind == "trace":
            self._line(info["trace"]["text"])

    def _line(self, text: str) -> None:
        print(f"{self.pipeline}: {text}", file=sys.stderr, flush=True)


def _progress_view(pipeline: Pipeline, n_stages: int) -> _ProgressView | _PlainProgress:
    return _ProgressView(pipeline, n_stages) if sys.stderr.isatty() else _PlainProgress(pipeline, n_stages)


def bench_command(args: argparse.Namespace) -> int:
    """Entry point of `jaxopt-audit bench` (options are defined in cli.py)."""
    try:
        if args.list:
            return list_pipelines(args.format)
        if not args.pipeline:
            raise UsageError("bench needs a pipeline name, `all`, or --list; "
                             f"pipelines: {', '.join(PIPELINE_NAMES)}")
        if args.repeats is not None and args.repeats < 1:
            raise UsageError(f"--repeats must be at least 1, got {args.repeats}")
        if args.budget is not None and args.budget < 0:
            raise UsageError(f"--budget must be a number of seconds >= 0, got {args.budget}")
        names = list(PIPELINE_NAMES) if args.pipeline == "all" else [args.pipeline]
        # Output paths before any measuring: a bad --out must not cost the whole benchmark.
        if args.out:
            (check_output_dir if len(names) > 1 else check_output_file)(args.out, "--out")
        if args.trace:
            check_output_dir(args.trace, "--trace")
        pipelines = [resolve_pipeline(name) for name in names]
        options = BenchOptions(size=args.size, repeats=args.repeats, budget_s=args.budget,
                               trace_dir=Path(args.trace) if args.trace else None, scan=scan_for_report)
        if len(pipelines) > 1 and args.stages:
            raise UsageError("--stages selects stages of one pipeline; drop it with `bench all`")
        selections = [(p, select_stages(p, args.stages)) for p in pipelines]
        for pipeline, _ in selections:
            if options.size not in pipeline.sizes:
                raise UsageError(f"--size {options.size!r}: {pipeline.name} has sizes {', '.join(pipeline.sizes)}")
    except (UsageError, OutputPathError) as exc:
        print(f"jaxopt-audit bench: {exc}", file=sys.stderr)
        return EXIT_USAGE

    all_results: list[BenchResult] = []
    failed = False
    for pipeline, stages in selections:
        out = None
        if args.out:
            out = Path(args.out)
            if len(selections) > 1:  # `bench all --out DIR`: one file per pipeline
                from ..runtime.bench.machine import machine_info  # imports JAX: only when measuring

                out = out / f"{pipeline.name}-{options.size}-{machine_info().platform}.json"

        def write_so_far(results: BenchResult, out: Path | None = out, total: int = len(stages)) -> None:
            # A run stopped by a time limit keeps the stages it finished; the last write is complete.
            if out is not None:
                write_json_atomic(out, results.to_json())
                print(f"jaxopt-audit bench: wrote {out} ({len(results.variants)} of {total} stages)",
                      file=sys.stderr, flush=True)

        try:
            with _progress_view(pipeline, len(stages)) as view:
                results = run_pipeline(pipeline, stages, options, on_event=view, on_result=write_so_far)
        except UsageError as exc:
            print(f"jaxopt-audit bench: {exc}", file=sys.stderr)
            return EXIT_USAGE
        all_results.append(results)
        failed |= any(not v.valid for v in results.variants)
        if out is not None:
            write_json_atomic(out, results.to_json())
            print(f"jaxopt-audit bench: wrote {out}", file=sys.stderr)
        if args.format == "table":
            _stdout_console().print(results_table(results))
    if args.format == "json" and not args.out:
        payload: Any = all_results[0].to_json() if len(all_results) == 1 else [r.to_json() for r in all_results]
        print(json.dumps(payload, indent=2, allow_nan=False))
    if options.trace_dir is not None:
        from ..runtime.trace import open_command  # imports JAX: only when traces were taken

        print(f"jaxopt-audit bench: traces in {options.trace_dir}; open them with: "
              f"{open_command(options.trace_dir)}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK
