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
from ..static.config import ConfigError
from ..static.engine import scan_paths
from ..static.registry import RuleLoadError, find_rule, load_rules


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
    """--no-cache: none; --cache-dir DIR; else beside the configuration (static/cache.py)."""
    if getattr(args, "no_cache", False):
        return None
    if getattr(args, "cache_dir", None):
        return args.cache_dir
    from ..static.cache import default_cache_dir
    from ..static.engine import resolve_config
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

    try:
        _render(args, fmt, result)
    except OSError as exc:
        if not args.output:
            raise
        return _usage_error(f"cannot write -o {args.output}: {exc.strerror or exc}; choose a writable path")
    return _exit_status(args, result)


def _render(args: argparse.Namespace, fmt: str, result) -> None:
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
        from ..report.terminal import render_statistics, render_terminal
        if args.output:
            console = Console(file=open(os.devnull, "w"), record=True, soft_wrap=True, width=120)
        else:
            console = output_console()
        if getattr(args, "statistics", False):
            render_statistics(result, console)
        else:
            render_terminal(result, console, concise=fmt == "concise", quiet=getattr(args, "quiet", False))
            if fmt == "full" and not getattr(args, "quiet", False) and _preview_off(result):
                console.print("[dim]The speed, tracing and key-reuse rules are preview, off by default: "
                              "`--extend-select PREVIEW` shows their findings as leads to check "
                              "(`jaxopt-audit run` measures them).[/]", highlight=False)
        if args.output:
            write_text_atomic(args.output, console.export_text())


def _preview_off(result) -> bool:
    """No preview rule ran, though the installed rules have some (a hint says how to see them)."""
    return not any(rule.tier() == "preview" for rule in result.rules) and any(
        rule.tier() == "preview" for rule in load_rules())


def _exit_status(args: argparse.Namespace, result) -> int:
    if result.internal_errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if (result.findings or result.errors) else EXIT_OK


def _apply_fixes(args: argparse.Namespace, result, config) -> int | None:
    """--diff: print the diff and return the exit status. --fix: write the fixes, say what
    changed on stderr, and return None (the caller re-scans and reports what is left)."""
    from ..static.engine import resolve_config
    from ..static.fix_run import fix_paths

    summary = fix_paths(result, resolve_config(list(args.paths), config), args.unsafe_fixes,
                        write=not args.diff)
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


# The catalog's section on preview rules: why they are off by default, and how to turn them on.
PREVIEW_SECTION = """\
## Preview

A preview rule is a heuristic whose precision on real code, judged by reading its findings in
repositories its author never tuned it on, is below the bar for default output (9 findings in 10
right overall, 8 in 10 for each rule). It stays in the tool, off by default, until a held-out
round shows it clears the bar. Turn all of them on with `--extend-select PREVIEW` (or
`extend-select = ["PREVIEW"]` in `pyproject.toml`), or one by its exact code
(`--extend-select JAX301`); with `PREVIEW` on, prefixes (`--select JAX3`) match them too.

The speed rules (JAX1xx, JAX2xx, JAX3xx, JAX7xx) are all preview: whether a loop is a hot
training loop, a host value is fetched every step, or a timed call is asynchronous depends on
what runs where, which reading one file cannot show. In the last two held-out rounds (16 public
research, library and tutorial repositories; README, "How precise it is today") 3 of their 60
sampled findings were worth a change. The others: setup, evaluation, decoding and visualisation
loops read as step loops, host reads that the loop needs (an action for a host environment, an early-stop
flag), helpers already traced from a jitted caller, configuration sweeps that build a new
function on purpose, tutorials written step by step. JAX701 (unsynchronized timing) came
closest: 18 of 25 on three rounds, then 16 of 36 on two rounds of repositories fetched after its
misreadings were fixed (a timer around work that a called function, another module or another
library already waits for; setup work too small to matter), 7 of 21 on the next two (a
serving engine timing asynchronous copies on purpose; 1 of 7 on a third), and 13 of 16 on three
more, then 0 of 3 (3 debatable) on a fourth: 37 of 83 over every round held out after the first
three, right where a file times work it wrote, wrong where an engine manages its own asynchrony
or the timer sits in code that only runs under jit. JAX102 (jit in a
loop) was wrong on all 12 findings of two rounds (one wrapper built per benchmark case, batch
size or file); after those patterns were fixed it was 1 of 7 and 5 of 21 on two fresh rounds,
the rest setup loops over a few axes and one-off diagnostic sweeps. JAX101, JAX201 and JAX301
were right in 5 of 73 findings on three later rounds (43 repositories). JAX501 (prng-key-reuse) was
right about half the time (14 of 29: keys reused on purpose so two networks start equal, draws
in distant notebook cells), then 17 of 60 in a later sample. A narrower JAX501 was tried for the default
output: only two draws from one key inside a function, or a key drawn from anew every
iteration (not a draw then a split, two splits, a flax `init`, a placeholder input for `init`,
top-level demonstration code or a benchmark). That part was 12 of 14 right on the sample it was
tuned on, and 5 of 15 on two rounds of repositories fetched afterwards: whether the drawn numbers
reach a result that matters (a draw thrown away on some branches, parameters used only under a
flag, a key that only picks what to log) is not something the key flow of one file shows. It
stays preview. JAX502 and JAX702 were right in fewer than one sampled finding in five (JAX702
0 of 16 on rounds l to p: tutorials write the update by hand on purpose).

Rounds p, q and r (36 more repositories, eighth session) judged the preview rules after that
session's fixes so far: 5 of 53, 8 of 59 and 5 of 60 sampled findings right. Each round's patterns were
fixed after it (a decode loop's end-of-sequence test, flax `init` keys, learning-rate schedules
timed or called per step; README, "How precise it is today"), and the next fresh round found
new ones, as every round has. Rounds s and t (24 more, ninth session): 7 of 116 and 22 of 48
(JAX501 22 of 26 on round t, in two repositories drawing several values from one key; the
speed rules 2 of 101 on the two rounds together: demonstration loops of 10 and 20 steps, greedy
decode loops whose host picks each token, batch samplers beside a jitted step, `step = update
+ 1` guards, a line search's accept/reject, all fixed after). Round u, after those fixes: 7 of 24
(the speed rules 2 of 15; JAX501 5 of 7). Rounds v to y (42 more, tenth session), each after the
fixes before it: 10 of 68, 6 of 12, 1 of 33 and 1 of 8 (the speed rules 3 of 69 on the four
together: rollouts recorded for a renderer, per-epoch prints under a flag, loops over files,
fixed after), and readers of rounds w and y listed 64 mistakes of which the preview output found 3.
Rounds z, aa, ab and ac (46 more, eleventh session; aa, ab and ac near its end): 8 of 32, 2 of
11, 12 of 57 and 8 of 26 (the speed rules 20 of 70 on the four together; JAX701 12 of 18, but
JAX301 4 of 24, JAX201 1 of 10, JAX101 1 of 6), and readers of rounds z and aa listed 80
mistakes of which the preview output found 12.

The tracing rules (JAX401-404) are preview too. Their claims hold for the code as the model
reads it, but on published code that code ran: a real tracing error does not survive the first
run, so what they find there is a tutorial showing the pitfall on purpose or a misreading of the
model (a shape built from static arguments through a helper, a list that is rebound to an array
later, an iterator the trace itself builds, a bound method's `static_argnums`). On three rounds
of repositories fetched fresh for the round (2026-11-25, 23 repositories) 2 of their 38 judged
findings were right; each round's misreadings were fixed afterwards, and the next fresh round
found new ones (a later round: 0 of 21 JAX404, all `import numpy as jnp` kept for when JAX is
absent, read as the `jnp` the traced code calls). They are most useful where code is being
written and has not run yet: in the editor or in pre-commit, with
`--extend-select JAX401,JAX402,JAX403,JAX404` (or `PREVIEW` for every preview rule).

`jaxopt-audit run` measures what these rules guess at (compilations, transfers, time per jitted
function), and `bench` and `run` scan with the preview rules on, so a finding stands beside the
measurement that confirms or refutes it.
"""


def rule_catalog(rules) -> str:
    """The rule catalog as one markdown page (docs/rules.md is this, generated): an index table,
    then each rule's own page as `rule CODE` prints it, headings pushed one level down."""
    lines = ["# Rule catalog", "",
             "Generated by `jaxopt-audit rules --format markdown` from the rule files in `rules/`;",
             "do not edit by hand. Codes and names are stable. Rules marked opt-in run only when",
             "selected by their exact code (or `ALL`); preview rules, with `--extend-select PREVIEW`",
             "(or their exact code). See [Preview](#preview).", "",
             "| code | name | severity | default | summary |", "|---|---|---|---|---|"]
    lines += [f"| [{r.CODE}](#{r.CODE.lower()}) | {r.NAME} | {r.SEVERITY} | "
              f"{r.tier()} | {r.SUMMARY} |" for r in rules]
    lines += ["", PREVIEW_SECTION.rstrip()]
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
        from ..report.terminal import render_rule_table
        render_rule_table(rules, Console())
    return EXIT_OK
