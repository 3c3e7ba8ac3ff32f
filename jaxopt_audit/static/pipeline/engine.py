"""Scanning: read and parse each file once, build its model, run every selected rule, collect
findings sorted and deterministic. Files are scanned in parallel on all cores.

Bad input never raises: unreadable, undecodable or unparsable files become `errors` entries and
the rest is still scanned. Positions are computed only for files that have findings, since
libcst's PositionProvider costs about as much as the parse.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import libcst as cst

from ...notebook_format import MYST_SUFFIXES, NOTEBOOK_SUFFIXES
from ..framework.fix import applicability
from ..framework.results import FileResult, ScanError
from ..framework.rule import Finding, Report, Rule
from ..model import SemanticModel
from .cache_use import cached_results, open_cache
from .config import Config, find_pyproject, load_config
from .discovery import discover, package_of
from .impact import impact_of
from .isolation import RECURSION_LIMIT, call_with_deep_stack, special_file_kind
from .noqa import suppressed
from .notebooks import neutralise, scan_notebook
from .project import ImportedView, ModuleSummary, Project, SummaryStore, summarise_model
from .registry import check_patterns, finding_counter, load_rules, select_rules


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[ScanError] = field(default_factory=list)
    files_scanned: int = 0
    lines_scanned: int = 0
    rules: list[type[Rule]] = field(default_factory=list)
    internal_errors: int = 0


def _syntax_message(exc: cst.ParserSyntaxError, source: str | bytes) -> str:
    """CPython's own message and position when it has one (libcst's are terse), else libcst's."""
    nul = _nul_position(source)
    if nul is not None:  # compile() refuses the whole text and libcst points at 1:1
        return f"syntax error at {nul[0]}:{nul[1]}: source contains a NUL byte; remove it"
    try:
        compile(source, "<scan>", "exec", dont_inherit=True)
    except SyntaxError as py_exc:
        if py_exc.lineno:
            return f"syntax error at {py_exc.lineno}:{py_exc.offset or 1}: {py_exc.msg}"
    except (ValueError, UnicodeDecodeError):
        pass
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid syntax"
    return f"syntax error at {exc.raw_line}:{exc.raw_column + 1}: {first}"


def _nul_position(source: str | bytes) -> tuple[int, int] | None:
    """1-based line and column of the first NUL byte, if any."""
    nul = "\0" if isinstance(source, str) else b"\0"
    index = source.find(nul)  # type: ignore[arg-type]
    if index < 0:
        return None
    newline = "\n" if isinstance(source, str) else b"\n"
    line_start = source.rfind(newline, 0, index) + 1  # type: ignore[arg-type]
    return source.count(newline, 0, index) + 1, index - line_start + 1  # type: ignore[arg-type]


def scan_source(source: str | bytes, path: str, rules: Iterable[Rule],
                ignored_codes: Iterable[str] = (), project: ImportedView | None = None,
                summaries: list[ModuleSummary] | None = None, cells: list[int] | None = None) -> FileResult:
    """Scan one file's text with already-instantiated rules. `project`: the functions it imports
    from other scanned modules; `summaries`: gets this module's summary (project.py); `cells`:
    a notebook's cell for each line."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return FileResult(path, [], ScanError(path, _syntax_message(exc, source)), 0)
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        return FileResult(path, [], ScanError(path, f"cannot decode: {exc}; save it as UTF-8"), 0)
    # The text as parsed (not `module.code`, which would re-generate the whole module).
    text = source.decode(module.encoding, "replace") if isinstance(source, bytes) else source
    lines = text.splitlines()
    rules = list(rules)
    analyse = any(rule.ANALYSIS for rule in rules)
    model = SemanticModel(module, path, package_of(path) if os.path.exists(path) else "", text, project,
                          analyse=analyse, cells=cells, rescan=finding_counter(scan_source, path))
    try:
        return _checked(model, path, lines, rules, ignored_codes, summaries)
    finally:
        model.release()


def _checked(model: SemanticModel, path: str, lines: list[str], rules: list[Rule], ignored_codes: Iterable[str],
             summaries: list[ModuleSummary] | None) -> FileResult:
    """The file's summary (when asked) and its findings, from its model."""
    if summaries is not None and model.analysed:  # summaries feed only rules that ask analysed facts
        try:
            summaries.append(summarise_model(model))
        except Exception:  # noqa: BLE001 - no summary: callers of this module stay unknown (silent)
            pass
    raw: list[tuple[Rule, Report]] = []
    internal: ScanError | None = None
    for rule in rules:
        try:
            raw.extend((rule, report) for report in rule.check(model))
        except Exception as exc:  # noqa: BLE001 - one rule's bug must not hide the others
            internal = ScanError(path, f"internal error in rule {rule.CODE}: {type(exc).__name__}: {exc}; "
                                       "please report it with this file")
    if not raw:
        return FileResult(path, [], internal, len(lines), internal is not None)
    positions = model.positions
    ignored = tuple(ignored_codes)
    findings: set[Finding] = set()
    for rule, report in raw:
        span = positions.get(report.node)
        if span is None:
            continue
        line = span.line
        if any(rule.CODE.startswith(c) for c in ignored):
            continue
        if 0 < line <= len(lines) and suppressed(rule.CODE, lines[line - 1]):
            continue
        findings.add(Finding(path, line, span.column + 1, rule.CODE, span.end_line,
                             span.end_column + 1, rule.NAME, report.severity or rule.SEVERITY,
                             report.message, report.fix or rule.FIX,
                             fix_applicability=applicability(rule, model, report),
                             impact=impact_of(model, rule, report).at_most_medium(report.bounded)))
    return FileResult(path, sorted(findings), internal, len(lines), internal is not None)


def scan_file(path: str, rules: Iterable[Rule], ignored_codes: Iterable[str] = (),
              project: ImportedView | None = None, summaries: list[ModuleSummary] | None = None) -> FileResult:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return FileResult(path, [], ScanError(path, f"cannot read: {exc.strerror or exc}"), 0)
    if path.lower().endswith(NOTEBOOK_SUFFIXES + MYST_SUFFIXES):
        # a notebook imports the modules beside it like a script does: the project pass serves both
        return scan_notebook(data, path, rules, ignored_codes,
                             functools.partial(scan_source, project=project, summaries=summaries))
    rules = list(rules)
    result = scan_source(data, path, rules, ignored_codes, project, summaries)
    if result.error is not None and result.error.message.startswith("syntax error"):
        return _exported_notebook(data, path, rules, ignored_codes, project, summaries) or result
    return result


def _exported_notebook(data: bytes, path: str, rules: list[Rule], ignored_codes: Iterable[str],
                       project: ImportedView | None, summaries: list[ModuleSummary] | None) -> FileResult | None:
    """A script exported from Colab or Jupyter keeps its `!pip install ...` and `%magic` lines,
    which are not Python. Read those lines as blank (as in a notebook), scan the rest, and say
    so; None when the file has no such lines or still does not parse."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    program = neutralise(text)
    changed = sum(1 for a, b in zip(text.split("\n"), program.split("\n"), strict=True) if a != b)
    if not changed:
        return None
    result = scan_source(program, path, rules, ignored_codes, project, summaries)
    if result.error is not None:
        return None
    lines = "1 IPython line (`!shell`, `%magic`) is" if changed == 1 else \
        f"{changed} IPython lines (`!shell`, `%magic`) are"
    note = f"{lines} not Python: read as blank, the rest was scanned"
    return result._replace(error=ScanError(path, note))


def scan_file_isolated(path: str, rules: list[Rule], ignored_codes: Iterable[str] = (),
                       project: ImportedView | None = None,
                       summaries: list[ModuleSummary] | None = None) -> FileResult:
    """scan_file, but nothing the file does escapes as an exception (isolation.py): special files
    are not opened, deep nesting gets a deep stack, and what still fails is this file's error."""
    kind = special_file_kind(path)
    if kind is not None:
        return FileResult(path, [], ScanError(path, f"not scanned: it is {kind}, not a regular file"), 0)
    try:
        try:  # nearly every file: here, at the default limit (a fresh deep-stack thread costs ~10%)
            return scan_file(path, rules, ignored_codes, project, summaries)
        except RecursionError:  # scan_file is pure, so the deep retry starts from scratch
            if summaries:
                summaries.clear()
            return call_with_deep_stack(scan_file, path, rules, ignored_codes, project, summaries)
    except RecursionError:
        return FileResult(path, [], ScanError(
            path, f"not scanned: nested too deeply to analyse (more than {RECURSION_LIMIT} levels of "
                  "recursion); split the deepest expression or exclude the file"), 0)
    except MemoryError:
        return FileResult(path, [], ScanError(path, "not scanned: out of memory while analysing it; "
                                                    "exclude the file or scan it on its own"), 0)
    except Exception as exc:  # noqa: BLE001 - the tool's bug, reported as this file's error
        return FileResult(path, [], ScanError(
            path, f"internal error: {type(exc).__name__}: {exc}; please report it with this file"), 0, True)


# Worker state: rules are loaded once per process, not once per file (Fixit's cost, docs/style.md).
_worker_rules: list[Rule] = []
_worker_config: Config | None = None


def _init_worker(codes: list[str], rules_dirs: list[str], config: Config) -> None:
    global _worker_rules, _worker_config
    # Ctrl-C reaches the whole process group: the parent stops the pool, workers stay quiet.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    by_code = {r.CODE: r for r in load_rules(rules_dirs)}
    _worker_rules = [by_code[c]() for c in codes]
    _worker_config = config


def _scan_in_worker(task: tuple[str, ImportedView | None]) -> tuple[FileResult, ModuleSummary | None]:
    assert _worker_config is not None
    return _scan_task(task, _worker_rules, _worker_config)


def _scan_task(task: tuple[str, ImportedView | None], rules: list[Rule],
               config: Config) -> tuple[FileResult, ModuleSummary | None]:
    """First scan (no view): the result and the module's summary. Second (a view): the result."""
    path, project = task
    summaries: list[ModuleSummary] | None = [] if project is None else None
    with _collected_once():
        result = scan_file_isolated(path, rules, config.ignored_for(path), project, summaries)
    return result, (summaries[0] if summaries else None)


@contextlib.contextmanager
def _collected_once():
    """A file's syntax tree and model are hundreds of thousands of young objects. Left to the
    generational collector, they are traversed again and again while the file parses and is
    analysed (a fifth of a cold scan of flax, one core). The collector waits while one file is
    scanned; `SemanticModel.release` breaks the model's cycles, so reference counting frees the
    file's objects and the one collection after it finds little left to traverse."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _pool_context():
    """fork is fastest, but forking a process that runs other threads (JAX's, when a library
    caller has imported it) can deadlock the children: spawn then."""
    threaded = threading.active_count() > 1 or "jax" in sys.modules or "jaxlib" in sys.modules
    return multiprocessing.get_context("spawn" if threaded else "fork")


def resolve_config(paths: list[str], config: Config | str | None) -> Config:
    """`None`: the nearest pyproject.toml to the first path; a path: that file; a Config: as is."""
    if isinstance(config, Config):
        return config
    if isinstance(config, str):
        return load_config(config)
    return load_config(find_pyproject(paths[0] if paths else "."))


def scan_paths(paths: list[str], *, select: list[str] | None = None, ignore: list[str] | None = None,
               extend_select: list[str] | None = None, exclude: list[str] | None = None,
               config: Config | str | None = None, rules_dirs: list[str] | None = None,
               jobs: int | None = None, progress=None, cache_dir: str | None = None,
               include_tests: bool = False) -> ScanResult:
    """Scan files and directories. Raises RuleLoadError / ConfigError for usage errors only.
    `cache_dir`: reuse and keep per-file results there (static/pipeline/cache.py); None: no cache.
    `include_tests`: test files get every selected rule (not only those test-files-ignore spares)."""
    paths = list(paths) or ["."]
    cfg = resolve_config(paths, config)
    if include_tests:
        cfg = dataclasses.replace(cfg, test_files_ignore=[])
    cfg = cfg.with_named_paths(paths)
    rules_dirs = list(rules_dirs or [])
    all_rules = load_rules(rules_dirs)
    _check_codes(all_rules, cfg, select=select, ignore=ignore, extend_select=extend_select)
    chosen_select = select if select is not None else cfg.select
    chosen = select_rules(all_rules, chosen_select, list(ignore or []) + cfg.ignore,
                          list(extend_select or []) + cfg.extend_select)
    found = discover(paths, list(exclude or []) + cfg.exclude, cfg.extend_include)
    result = ScanResult(rules=chosen)
    result.errors.extend(ScanError(p, m) for p, m in found.errors)
    files = found.files
    jobs = jobs or os.cpu_count() or 1
    pool = None
    if jobs > 1 and len(files) >= 8:
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_pool_context(), initializer=_init_worker,
                                   initargs=([r.CODE for r in chosen], rules_dirs, cfg))
    instances = [r() for r in chosen] if pool is None else []

    def run(tasks: list[tuple[str, ImportedView | None]]) -> Iterable[tuple[FileResult, ModuleSummary | None]]:
        if pool is None:
            return (_scan_task(task, instances, cfg) for task in tasks)
        # Largest files first, in small chunks, so no core idles at the end on one big file;
        # the output order does not depend on this (findings are sorted).
        by_size = sorted(tasks, key=lambda t: _size(t[0]), reverse=True)
        return pool.map(_scan_in_worker, by_size, chunksize=max(1, len(tasks) // (jobs * 64)))

    try:
        _scan_project(result, files, cfg, chosen, run, cache_dir, progress)
    except BaseException:  # Ctrl-C: drop the queued files instead of scanning them all first
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    if pool is not None:
        pool.shutdown()
    result.findings.sort(key=Finding.sort_key)
    result.errors.sort()
    return result


def scan_for_report(paths: list[str]) -> ScanResult:
    """The scan that `run`, `bench` and `report` put beside their measurements: one process, every
    rule a measurement can confirm or refute (the preview rules too), and the test-file policy off
    (the user chose these files, whatever their folder)."""
    return scan_paths(paths, jobs=1, include_tests=True, extend_select=["PREVIEW"])


def _scan_project(result: ScanResult, files: list[str], cfg: Config, chosen: list[type[Rule]], run,
                  cache_dir: str | None, progress) -> None:
    """The project-wide pass (project.py). Each file is scanned once and summarised from its model;
    the files that call, in a loop, a function imported from another scanned module are scanned
    again with those summaries. With a cache, known summaries are reused and a file's entry is
    keyed on the summaries it imports, so editing model.py re-scans train.py."""
    store = SummaryStore(cache_dir)
    digests: dict[str, str] = {}
    summaries: dict[str, ModuleSummary] = {}
    first: list[str] = []
    for path in files:
        known, summary = False, None
        if cache_dir is not None:
            digests[path] = digest = _digest(path)
            known, summary = store.lookup(path, digest)
        if not known:
            first.append(path)
        elif summary is not None:
            summaries[summary.path] = summary
    scanned: dict[str, FileResult] = {}
    for file_result, summary in run([(p, None) for p in first]):
        scanned[file_result.path] = file_result
        if progress is not None:
            progress()
        if summary is not None:
            summaries[summary.path] = summary
        if file_result.path in digests and not file_result.internal_error:  # a crash is retried next time
            store.put(file_result.path, digests[file_result.path], summary)
    project = Project(summaries)
    cache = keys = None
    todo = files
    if cache_dir is not None:
        cache = open_cache(cache_dir, chosen, cfg, lambda path, content: (project.view(path).digest(),))
        todo, keys = cached_results(cache, files, cfg, lambda r: _collect(result, r), progress)
    # a file whose functions another module traces is scanned again only when its first scan
    # found something: knowing them traced silences the speed rules there; what it could add
    # (a tracing rule on a value the file itself makes an array) is rare, and a second parse
    # of every such file costs a twentieth of a scan
    again = [(p, view) for p in todo if (view := project.view(p)).functions or p not in scanned
             or (view.traced and scanned[p].findings)]
    for file_result, _ in run(again):
        scanned[file_result.path] = file_result
    for path in todo:
        _collect(result, scanned[path], cache, keys)
        if progress is not None and path not in first:
            progress()
    if cache is not None:
        cache.save()
        store.save()


def _digest(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return ""




def _check_codes(rules: list[type[Rule]], cfg: Config, **options: list[str] | None) -> None:
    """Every code named on the command line or in the configuration, before any work."""
    for option, codes in options.items():
        check_patterns(rules, codes or [], f"--{option.replace('_', '-')}")
    where = f"[tool.jaxopt-audit] of {cfg.source}"
    for key, codes in (("select", cfg.select), ("extend-select", cfg.extend_select), ("ignore", cfg.ignore)):
        check_patterns(rules, codes or [], f"{key} in {where}")
    for pattern, codes in cfg.per_file_ignores.items():
        check_patterns(rules, codes, f"per-file-ignores {pattern!r} in {where}")


def _collect(result: ScanResult, file_result: FileResult, cache=None, keys=None) -> None:
    if cache is not None and file_result.path in keys:
        cache.put(keys[file_result.path], file_result)
    result.findings.extend(file_result.findings)
    if file_result.error is not None:
        result.errors.append(file_result.error)
        if file_result.internal_error:
            result.internal_errors += 1
    if file_result.error is None or file_result.internal_error:
        result.files_scanned += 1
        result.lines_scanned += file_result.lines
