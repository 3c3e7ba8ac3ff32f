"""Command line: subcommands and their options only; each dispatches to the module that does the work.

Imports are lazy so that `scan`, `rule` and `rules` never import JAX (a lint-only CI job does not
install it), and a runtime command run without the `runtime` extra says which extra to install.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import traceback
from collections.abc import Callable, Sequence

from . import __version__
from .exit_codes import INTERRUPTED as EXIT_INTERRUPTED  # noqa: E402
from .exit_codes import USAGE as EXIT_ERROR  # noqa: E402

RUNTIME_EXTRA_HINT = "install the runtime extra: pip install 'jaxopt-audit[runtime]'"


def _lazy(target: str, needs: tuple[str, ...] = ()) -> Callable[[argparse.Namespace], int]:
    """`module:function` imported only when the subcommand runs; `needs` are the packages of
    the runtime extra it cannot work without."""

    def call(args: argparse.Namespace) -> int:
        missing = [name for name in needs if importlib.util.find_spec(name) is None]
        if missing:
            print(f"jaxopt-audit: {args.command} needs {', '.join(missing)}, which "
                  f"{'is' if len(missing) == 1 else 'are'} not installed; {RUNTIME_EXTRA_HINT}", file=sys.stderr)
            return EXIT_ERROR
        module_name, func_name = target.split(":")
        try:
            module = importlib.import_module(f"jaxopt_audit.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] in {"jax", "jaxlib", "optax", "matplotlib"}:
                print(f"jaxopt-audit: {args.command} needs {exc.name}, which is not installed; "
                      f"{RUNTIME_EXTRA_HINT}", file=sys.stderr)
                return EXIT_ERROR
            raise
        return getattr(module, func_name)(args)

    return call


def _add_scan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scan", help="statically analyse Python files for JAX performance mistakes")
    p.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    p.add_argument("--format", choices=["full", "concise", "json", "sarif", "github"], default=None,
                   help="output format (default: full)")
    p.add_argument("--select", default=None, help="comma-separated codes or prefixes to enable")
    p.add_argument("--extend-select", default=None, help="codes or prefixes added to the selection")
    p.add_argument("--ignore", default=None, help="comma-separated codes or prefixes to disable")
    p.add_argument("--exclude", action="append", default=None, metavar="GLOB",
                   help="skip paths matching this glob (repeatable)")
    p.add_argument("--rules-dir", action="append", default=None, metavar="DIR",
                   help="load additional rules from the .py files of DIR (repeatable)")
    p.add_argument("--config", default=None, metavar="PYPROJECT",
                   help="read [tool.jaxopt-audit] from this file instead of the nearest pyproject.toml")
    p.add_argument("--no-config", action="store_true", help="ignore pyproject.toml configuration")
    p.add_argument("--include-tests", action="store_true",
                   help="report every selected rule in test files too (by default they get only JAX6xx)")
    p.add_argument("--statistics", action="store_true",
                   help="print the number of findings per rule instead of the findings")
    p.add_argument("--min-impact", choices=("high", "medium", "unknown", "low"), default=None, metavar="LEVEL",
                   help="report only findings of this impact or more: high, medium, unknown (a loop whose "
                        "length the file does not show), low")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="print the findings and errors only, no summary")
    p.add_argument("--fix", action="store_true", help="apply the safe automatic fixes, then report what is left")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="with --fix or --diff: also apply fixes that may change behaviour")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="keep the result cache in DIR (default: .jaxopt_audit_cache beside the configuration)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write the report to FILE")
    p.set_defaults(func=_lazy("commands.scan:scan_command"))


def _add_rules(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rule", help="print a rule's documentation")
    p.add_argument("code", help="rule code (JAX301) or name (host-sync-in-step)")
    p.add_argument("--rules-dir", action="append", default=None, metavar="DIR")
    p.set_defaults(func=_lazy("commands.scan:rule_command"))
    p = sub.add_parser("rules", help="list the rules")
    p.add_argument("--format", choices=["table", "json", "markdown"], default="table",
                   help="markdown: the whole catalog, every rule's documentation (docs/rules.md)")
    p.add_argument("--rules-dir", action="append", default=None, metavar="DIR")
    p.set_defaults(func=_lazy("commands.scan:rules_command"))


def _add_bench(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure a reference pipeline stage by stage")
    p.add_argument("pipeline", nargs="?", help="pipeline name, or 'all'")
    p.add_argument("--list", action="store_true", help="list the pipelines and their stages")
    p.add_argument("--size", default="small", help="workload size: small or full (default: small)")
    p.add_argument("--stages", default=None, help="comma-separated stage modules or indices")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--out", default=None, metavar="FILE", help="write the JSON results to FILE")
    p.add_argument("--trace", default=None, metavar="DIR", help="capture an XProf trace into DIR")
    p.add_argument("--repeats", type=int, default=None, help="steady-state repeats (default: adaptive)")
    p.add_argument("--budget", type=float, default=None, help="seconds of steady-state timing per stage")
    p.set_defaults(func=_lazy("commands.bench:bench_command", needs=("jax", "numpy")))


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a markdown case study from bench or run results")
    p.add_argument("results", nargs="+",
                   help="bench JSON files of one pipeline (e.g. CPU and GPU), or `run --json` files of "
                        "versions of your program, oldest first (before.json after.json)")
    p.add_argument("-o", "--output", default=None, help="markdown file (default: reports/<pipeline>.md)")
    p.set_defaults(func=_lazy("commands.report:report_command", needs=("matplotlib",)))


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a script with JAX instrumentation and report what happened")
    p.add_argument("--json", default=None, metavar="FILE", help="write the machine report to FILE")
    p.add_argument("--trace", default=None, metavar="DIR", help="capture an XProf trace into DIR")
    p.add_argument("--trace-steps", default=None, metavar="N:M",
                   help="with --trace: trace only steps N..M of the hottest jitted function")
    p.add_argument("--no-scan", action="store_true", help="do not cross-check with the static scan")
    p.add_argument("-m", dest="module", default=None, metavar="MODULE", help="run a module as a script")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="script.py and its arguments")
    p.set_defaults(func=_lazy("commands.run:run_command", needs=("jax", "numpy")))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxopt-audit",
        description="Find JAX performance mistakes, confirm them at runtime and measure the fix.")
    parser.add_argument("--version", action="version", version=f"jaxopt-audit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_scan, _add_rules, _add_bench, _add_report, _add_run):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("jaxopt-audit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:  # noqa: BLE001 - user errors are one-line messages; this is the tool's bug
        traceback.print_exc()
        print(f"jaxopt-audit: internal error (a bug in jaxopt-audit {__version__}, not in your code); "
              "please report it with the command line and the traceback above", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
