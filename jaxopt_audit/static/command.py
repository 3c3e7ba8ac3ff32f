"""The `scan`, `rule` and `rules` subcommands: turn arguments into a scan and pick a renderer.

Exit status (DESIGN.md): 0 no findings, 1 findings (or files that could not be scanned),
2 usage error or a crash of the tool itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rich.console import Console
from rich.markdown import Markdown

from .config import ConfigError
from .engine import scan_paths
from .registry import RuleLoadError, find_rule, load_rules
from ..fileio import write_text_atomic

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip().upper() for v in value.split(",") if v.strip()]


def _usage_error(message: str) -> int:
    print(f"jaxopt-audit: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def scan_command(args: argparse.Namespace) -> int:
    fmt = args.format or "full"
    interactive = fmt in ("full", "concise") and args.output is None and sys.stderr.isatty()
    try:
        config = None if not args.no_config else __import__(
            "jaxopt_audit.static.config", fromlist=["Config"]).Config()
        if args.config is not None:
            config = args.config
        progress = None
        if interactive:
            from rich.progress import Progress
            progress_bar = Progress(transient=True, console=Console(stderr=True))
        else:
            progress_bar = None
        if progress_bar is not None:
            with progress_bar:
                task = progress_bar.add_task("scanning", total=None)
                progress = lambda: progress_bar.advance(task)  # noqa: E731
                result = scan_paths(args.paths, select=_split(args.select), ignore=_split(args.ignore),
                                    extend_select=_split(args.extend_select), exclude=args.exclude,
                                    config=config, rules_dirs=args.rules_dir, jobs=args.jobs,
                                    progress=progress, include_tests=args.include_tests)
        else:
            result = scan_paths(args.paths, select=_split(args.select), ignore=_split(args.ignore),
                                extend_select=_split(args.extend_select), exclude=args.exclude,
                                config=config, rules_dirs=args.rules_dir, jobs=args.jobs,
                                include_tests=args.include_tests)
    except (ConfigError, RuleLoadError) as exc:
        return _usage_error(str(exc))

    if fmt in ("json", "sarif", "github"):
        from ..report.github import render_github
        from ..report.json_report import render_json
        from ..report.sarif import render_sarif
        text = {"json": render_json, "sarif": render_sarif, "github": render_github}[fmt](result)
        if args.output:
            write_text_atomic(args.output, text)
        else:
            sys.stdout.write(text)
    else:
        from ..report.terminal import render_terminal
        if args.output:
            console = Console(file=open(os.devnull, "w"), record=True, width=120)
            render_terminal(result, console, concise=fmt == "concise", statistics=args.statistics)
            write_text_atomic(args.output, console.export_text())
        else:
            render_terminal(result, Console(highlight=False), concise=fmt == "concise",
                            statistics=args.statistics)
    if result.internal_errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if (result.findings or result.errors) else EXIT_OK


def rule_command(args: argparse.Namespace) -> int:
    try:
        rules = load_rules(args.rules_dir or [])
    except RuleLoadError as exc:
        return _usage_error(str(exc))
    rule = find_rule(rules, args.code)
    if rule is None:
        return _usage_error(f"no rule {args.code!r}; `jaxopt-audit rules` lists them")
    console = Console()
    if console.is_terminal:
        console.print(Markdown(rule.markdown()))
    else:
        sys.stdout.write(rule.markdown())
    return EXIT_OK


def rules_command(args: argparse.Namespace) -> int:
    try:
        rules = load_rules(args.rules_dir or [])
    except RuleLoadError as exc:
        return _usage_error(str(exc))
    if args.format == "json":
        json.dump([{"code": r.CODE, "name": r.NAME, "severity": r.SEVERITY, "summary": r.SUMMARY,
                    "fix": r.FIX} for r in rules], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from ..report.terminal import render_rule_table
        render_rule_table(rules, Console())
    return EXIT_OK
