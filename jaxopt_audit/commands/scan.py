"""The `scan`, `rule` and `rules` subcommands: turn arguments into a scan and pick a renderer.

Exit status (docs/design.md): 0 no findings, 1 findings (or files that could not be scanned),
2 usage error or a crash of the tool itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rich.console import Console
from rich.markdown import Markdown

from ..exit_codes import FINDINGS as EXIT_FINDINGS  # noqa: E402
from ..exit_codes import OK as EXIT_OK  # noqa: E402
from ..exit_codes import USAGE as EXIT_ERROR  # noqa: E402
from ..fileio import OutputPathError, check_output_file, write_text_atomic
from ..report.github import render_github
from ..report.json_report import render_json
from ..report.sarif import render_sarif
from ..report.terminal import render_rule_table, render_statistics, render_terminal
from ..static.autofix.run import fix_paths
from ..static.framework.rule import IMPACT_LEVELS
from ..static.pipeline.cache import default_cache_dir
from ..static.pipeline.config import ConfigError
from ..static.pipeline.engine import resolve_config, scan_paths, scan_source
from ..static.pipeline.registry import RuleLoadError, find_rule, load_rules


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip().upper() for v in value.split(",") if v.strip()]


def _usage_error(message: str) -> int:
    print(f"jaxopt-audit: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def output_console() -> Console:
    """stdout as rich sees it: colour only on a terminal (rich honours NO_COLOR and FORCE_COLOR),
    and never hard-wrapped when piped, so `path:line:col:` parsers see one line per finding."""
    return Console(highlight=False, soft_wrap=not sys.stdout.isatty())


def _cache_dir(args: argparse.Namespace, config) -> str | None:
    """--no-cache: none; --cache-dir DIR; else beside the configuration (static/pipeline/cache.py)."""
    if getattr(args, "no_cache", False):
        return None
    if getattr(args, "cache_dir", None):
        return args.cache_dir
    return default_cache_dir(resolve_config(list(args.paths) or ["."], config).source)


def _scan(args: argparse.Namespace, config, progress=None):
    return scan_paths(args.paths, select=_split(args.select), ignore=_split(args.ignore),
                      extend_select=_split(args.extend_select), exclude=args.exclude,
                      config=config, rules_dirs=args.rules_dir, jobs=args.jobs, progress=progress,
                      cache_dir=_cache_dir(args, config), include_tests=getattr(args, "include_tests", False))


def scan_command(args: argparse.Namespace) -> int:
    fmt = args.format or "full"
    interactive = fmt in ("full", "concise") and args.output is None and sys.stderr.isatty()
    try:
        if args.output is not None:  # before the work: a bad -o must not cost a whole scan
            check_output_file(args.output, "-o")
        config = None if not args.no_config else __import__(
            "jaxopt_audit.static.pipeline.config", fromlist=["Config"]).Config()
        if args.config is not None:
            config = args.config
        progress = None
        if interactive:
            from rich.progress import Progress  # only a terminal shows a progress bar: a pipe skips its import
            progress_bar = Progress(transient=True, console=Console(stderr=True))
        else:
            progress_bar = None
        if progress_bar is not None:
            with progress_bar:
                task = progress_bar.add_task("scanning", total=None)
                progress = lambda: progress_bar.advance(task)  # noqa: E731
                result = _scan(args, config, progress)
        else:
            result = _scan(args, config)
    except (ConfigError, RuleLoadError, OutputPathError) as exc:
        return _usage_error(str(exc))

    if getattr(args, "diff", False) or getattr(args, "fix", False):
        fixed = _apply_fixes(args, result, config)
        if fixed is not None:
            return fixed
        result = _scan(args, config)
    if getattr(args, "min_impact", None):
        result.findings = at_least(result.findings, args.min_impact)

    try:
        _render(args, fmt, result)
    except OSError as exc:
        if not args.output:
            raise
        return _usage_error(f"cannot write -o {args.output}: {exc.strerror or exc}; choose a writable path")
    return _exit_status(args, result)


def _render(args: argparse.Namespace, fmt: str, result) -> None:
    if fmt in ("json", "sarif", "github"):
        text = {"json": render_json, "sarif": render_sarif, "github": render_github}[fmt](result)
        if args.output:
            write_text_atomic(args.output, text)
        else:
            sys.stdout.write(text)
    else:
        if args.output:
            console = Console(file=open(os.devnull, "w"), record=True, soft_wrap=True, width=120)
        else:
            console = output_console()
        if getattr(args, "statistics", False):
            render_statistics(result, console)
        else:
            render_terminal(result, console, concise=fmt == "concise", quiet=getattr(args, "quiet", False))
            if fmt == "full" and not getattr(args, "quiet", False) and _preview_off(result, args.rules_dir or []):
                console.print("[dim]Some installed rules are preview, off by default: "
                              "`--extend-select PREVIEW` adds their findings.[/]", highlight=False)
        if args.output:
            write_text_atomic(args.output, console.export_text())


def at_least(findings: list, level: str) -> list:
    """The findings whose impact is `level` or more (static/framework/rule.py IMPACT_LEVELS orders them)."""
    limit = IMPACT_LEVELS.index(level)
    return [f for f in findings if f.impact is not None and f.impact.rank() <= limit]


def _preview_off(result, rules_dirs: list[str]) -> bool:
    """No preview rule ran, though the installed rules have some (a hint says how to see them)."""
    return not any(rule.tier() == "preview" for rule in result.rules) and any(
        rule.tier() == "preview" for rule in load_rules(rules_dirs))


def _exit_status(args: argparse.Namespace, result) -> int:
    if result.internal_errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if (result.findings or result.errors) else EXIT_OK


def _apply_fixes(args: argparse.Namespace, result, config) -> int | None:
    """--diff: print the diff and return the exit status. --fix: write the fixes, say what
    changed on stderr, and return None (the caller re-scans and reports what is left)."""
    summary = fix_paths(result, resolve_config(list(args.paths), config), args.unsafe_fixes,
                        write=not args.diff, scan=scan_source)
    count = sum(len(o.applied) for o in summary.outcomes)
    files = len(summary.outcomes)
    if args.diff:
        for outcome in summary.outcomes:
            sys.stdout.write(outcome.diff())
        for reason in summary.reasons:
            print(reason, file=sys.stderr)
        print(f"Would fix {count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}"
              + ("" if args.unsafe_fixes else " (more with --unsafe-fixes)" if _unsafe_left(result) else "")
              + ".", file=sys.stderr)
        return EXIT_FINDINGS if count else EXIT_OK
    for outcome in summary.outcomes:
        for applied in outcome.applied:
            cell = f"cell {applied.cell}:" if applied.cell is not None else ""
            print(f"{outcome.path}:{cell}{applied.line}:{applied.column}: fixed {applied.code}: "
                  f"{applied.description}", file=sys.stderr)
    for reason in summary.reasons:
        print(reason, file=sys.stderr)
    print(f"Fixed {count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}."
          + (f" {summary.notebooks_left} fixable finding(s) in notebooks left." if summary.notebooks_left else "")
          + ("" if args.unsafe_fixes or not _unsafe_left(result) else " More fixes with --unsafe-fixes."),
          file=sys.stderr)
    return None


def _unsafe_left(result) -> bool:
    return any(f.fix_applicability == "unsafe" for f in result.findings)


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


# The catalog's section on what runs by default, and on the impact every finding carries.
TIERS_SECTION = """\
## Default, opt-in and preview rules

Every rule whose findings state facts about the code is on by default. A finding claims only
what the file shows: this function is not jitted and is called once per iteration of the loop
at line N; this value is a device array read to the host inside that loop; this key was drawn
from at line M. Whether fixing it pays in your program is what `jaxopt-audit run` measures.

- **opt-in** rules give advice on code that works (JAX602: `PRNGKey` and `pmap` have newer
  replacements; JAX702: a hand-written optimizer update). They run only when selected by their
  exact code or `ALL` (`--extend-select JAX702`); a prefix (`--select JAX7`) does not turn them on.
- **preview** rules (a team's own rules may set `PREVIEW = True`) are off until
  `--extend-select PREVIEW` (or their exact code); with `PREVIEW` on, prefixes match them too.
  A bundled rule goes to preview when the claims of its findings, judged on code its author did
  not tune it on, fall below 90% true (docs/evaluation.md).

## Impact

Every finding carries `impact`: a level, the number of times its code runs when the file shows
it, and the evidence in words. Runs come from literal trip counts (`range(5000)`, a name bound
once to a number or to arithmetic of numbers, such as a module constant `N_STEPS = 10 * 500`,
also through a progress bar: `tqdm(range(N_STEPS))`), what the file's calls pass for a parameter
(`train(params, 200)`; the largest, as an upper bound, when its calls pass different numbers), a
parameter's default, or a setting the file writes down in one way (`--steps` with
`default=5000`, a config field), multiplied over nested loops and over the loops around a
function's callers; `range(start, start + n)` runs `n` times whatever `start` is. For rules whose
cost is paid on every run (JAX1xx, JAX2xx, JAX3xx): `high` from 1,000 runs, `medium` from 50,
`low` below that or when the code runs once, `unknown` when a loop's length is not worked out
from the file (a data loader, `while True`, `self.n_steps`), and the evidence then names what it
depends on; a level lower for code
under a condition inside the loop, or for an un-jitted function of a single array operation.
Correctness rules (JAX4xx, JAX5xx) are `medium` whatever the count, `high` for a key reused on
every run of a loop of 1,000 runs or more; a removed API is `medium`, a deprecated one `low`; a
wrong timing (JAX701) is `medium`. The full output lists the most impactful findings first and
counts the `high` ones; `--min-impact LEVEL` keeps findings at that level or above, in the order
high, medium, unknown, low.
"""


def rule_catalog(rules) -> str:
    """The rule catalog as one markdown page (docs/rules.md is this, generated): an index table,
    then each rule's own page as `rule CODE` prints it, headings pushed one level down."""
    lines = ["# Rule catalog", "",
             "Generated by `jaxopt-audit rules --format markdown` from the rule files in `rules/`;",
             "do not edit by hand. Codes and names are stable. Rules marked opt-in run only when",
             "selected by their exact code (or `ALL`). See [Default, opt-in and preview",
             "rules](#default-opt-in-and-preview-rules) and [Impact](#impact).", "",
             "| code | name | severity | default | summary |", "|---|---|---|---|---|"]
    lines += [f"| [{r.CODE}](#{r.CODE.lower()}) | {r.NAME} | {r.SEVERITY} | "
              f"{r.tier()} | {r.SUMMARY} |" for r in rules]
    lines += ["", TIERS_SECTION.rstrip()]
    for r in rules:
        page = r.markdown().replace("\n#", "\n##")
        title, _, body = page.partition("\n")
        lines += ["", f"## {r.CODE}", "", f"`{r.NAME}` ({r.SEVERITY})", body.rstrip()]
    return "\n".join(lines) + "\n"


def rules_command(args: argparse.Namespace) -> int:
    try:
        rules = load_rules(args.rules_dir or [])
    except RuleLoadError as exc:
        return _usage_error(str(exc))
    if args.format == "json":
        json.dump([{"code": r.CODE, "name": r.NAME, "severity": r.SEVERITY, "default": r.tier(),
                    "summary": r.SUMMARY, "fix": r.FIX} for r in rules], sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "markdown":
        sys.stdout.write(rule_catalog(rules))
    else:
        render_rule_table(rules, Console())
    return EXIT_OK
