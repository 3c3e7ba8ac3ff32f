"""Run a user's program in this process exactly as `python script.py` / `python -m mod` would.

Same `sys.argv`, `sys.path[0]` (the script's directory, or the working directory for `-m`),
`__name__ == "__main__"`; `SystemExit` gives the exit status Python would (None -> 0, an int,
anything else printed -> 1); an uncaught exception has its traceback printed (without this
tool's frames) and status 1, KeyboardInterrupt 130. The interpreter state changed for the run
(argv, path[0], the working directory) is restored afterwards so the report can be written.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from types import TracebackType


@dataclass(frozen=True)
class Program:
    """What to run: a script path or a module name, and its arguments."""

    script: str | None
    module: str | None
    args: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        """argv as the user typed it (for the report)."""
        head = self.script if self.script is not None else f"-m {self.module}"
        return [head, *self.args]

    @property
    def source_paths(self) -> list[str]:
        """Files to cross-check with the static scan: the script, or the module's file.

        For a dotted module this imports its parent packages: ask only after the run, so that
        nothing the program jits is created before the instruments are on.
        """
        if self.script is not None:
            return [os.path.abspath(self.script)]
        try:
            spec = _module_spec(self.module or "")
        except (ImportError, ValueError):
            return []
        return [spec.origin] if spec is not None and spec.origin and spec.origin.endswith(".py") else []


@dataclass(frozen=True)
class Outcome:
    """How the program ended."""

    exit_status: int
    error: str | None  # "ValueError: bad shape" for an uncaught exception, else None


class ProgramNotFound(Exception):
    """The script file or module does not exist (a usage error, not the program's)."""


def check(program: Program) -> None:
    """Fail early, before instruments are installed, when there is nothing to run."""
    if program.script is not None:
        if not os.path.exists(program.script):
            raise ProgramNotFound(f"{program.script}: no such file; give the path of a Python script "
                                  "(or -m MODULE)")
        if os.path.isdir(program.script) and not os.path.exists(os.path.join(program.script, "__main__.py")):
            raise ProgramNotFound(f"{program.script}: is a directory without __main__.py; give a script")
    elif program.module is not None:
        # only the top-level name: finding a submodule would import (and run) its packages now
        top = program.module.partition(".")[0]
        try:
            found = _module_spec(top)
        except (ImportError, ValueError) as exc:
            raise ProgramNotFound(f"-m {program.module}: cannot be imported ({exc}); check the name "
                                  "and the working directory") from exc
        if found is None:
            raise ProgramNotFound(f"-m {program.module}: no module named {top!r} on sys.path; check the "
                                  "name and the working directory")


def _module_spec(name: str) -> ModuleSpec | None:
    import importlib.util

    added = os.getcwd() not in sys.path
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name)
    finally:
        if added:
            sys.path.remove(os.getcwd())


def run(program: Program) -> Outcome:
    """Execute the program; never raises for anything the program does."""
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    try:
        if program.script is not None:
            sys.argv = [program.script, *program.args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(program.script)))
            runpy.run_path(program.script, run_name="__main__")
        else:
            assert program.module is not None
            sys.argv = [program.module, *program.args]  # runpy replaces argv[0] with the file
            sys.path.insert(0, os.getcwd())
            runpy.run_module(program.module, run_name="__main__", alter_sys=True)
        return Outcome(0, None)
    except SystemExit as exc:
        return Outcome(_exit_status(exc), None)
    except KeyboardInterrupt as exc:
        _print_traceback(exc)
        return Outcome(130, "KeyboardInterrupt")
    except BaseException as exc:  # the program's error: reported, never the tool's crash
        _print_traceback(exc)
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return Outcome(1, text.splitlines()[0] if text else type(exc).__name__)
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
        os.chdir(saved_cwd)  # the report's relative paths are relative to where `run` started
        sys.stdout.flush()


def _exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else code % 256
    print(code, file=sys.stderr)
    return 1


_OWN_FILES = {os.path.abspath(__file__), os.path.abspath(runpy.__file__)}


def _print_traceback(exc: BaseException) -> None:
    """The traceback Python would print: frames of runpy and this module left out."""
    tb: TracebackType | None = exc.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename.startswith("<frozen runpy")
                              or os.path.abspath(tb.tb_frame.f_code.co_filename) in _OWN_FILES):
        tb = tb.tb_next
    sys.stdout.flush()
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    sys.stderr.flush()
