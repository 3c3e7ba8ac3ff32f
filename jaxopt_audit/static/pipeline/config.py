"""`[tool.jaxopt-audit]` in the nearest pyproject.toml: select, ignore, exclude, per-file-ignores,
and the test-file policy (test-files, test-files-ignore)."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path


class ConfigError(Exception):
    pass


# Test files: a directory named like an entry ending in "/", or a file name like the others.
TEST_FILES = ["tests/", "test/", "test_*.py", "*_test.py", "conftest.py"]
# Off in test files by default (README, "The rules"): speed does not matter
# there (JAX1, JAX2, JAX3, JAX7), tests trigger tracing errors on purpose and a real one fails the
# test (JAX4), and keys reused in tests make identical inputs on purpose or harmlessly (JAX5).
# Deprecated and removed APIs (JAX6) break a test suite on upgrade like any code: still reported.
TEST_FILES_IGNORE = ["JAX1", "JAX2", "JAX3", "JAX4", "JAX5", "JAX7"]


@dataclass
class Config:
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    extend_include: list[str] = field(default_factory=list)  # more files to scan (MyST notebooks)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    test_files: list[str] = field(default_factory=lambda: list(TEST_FILES))
    test_files_ignore: list[str] = field(default_factory=lambda: list(TEST_FILES_IGNORE))
    source: str | None = None  # the pyproject.toml it came from
    root: str = "."  # patterns are relative to the config's directory
    # paths named on the command line that lie in a test folder: the files under them are judged
    # by their place below the named path, since naming a folder asks for its files to be checked
    named_in_tests: list[str] = field(default_factory=list)

    def ignored_for(self, path: str) -> list[str]:
        rel = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))).as_posix()
        out: list[str] = list(self.test_files_ignore) if self._is_test(path, rel) else []
        for pattern, codes in self.per_file_ignores.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(os.path.basename(rel), pattern):
                out.extend(codes)
        return out


    def _is_test(self, path: str, rel: str) -> bool:
        if not is_test_file(rel, self.test_files):
            return False
        absolute = os.path.abspath(path)
        for named in self.named_in_tests:
            base = os.path.abspath(named)
            if absolute == base or absolute.startswith(base.rstrip(os.sep) + os.sep):
                below = Path(os.path.relpath(absolute, base if os.path.isdir(base) else os.path.dirname(base)))
                return is_test_file(below.as_posix(), self.test_files)
        return True

    def with_named_paths(self, paths: list[str]) -> Config:
        """This configuration, told which of the paths the user named lie in a test folder."""
        inside = [p for p in paths if self.test_files_ignore and _in_test_folder(p, self)]
        return dataclasses.replace(self, named_in_tests=inside) if inside else self


def _in_test_folder(path: str, config: Config) -> bool:
    rel = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(config.root))).as_posix()
    folder = rel if os.path.isdir(path) else os.path.dirname(rel)
    return bool(folder) and folder != "." and is_test_file(folder + "/_", config.test_files)


def is_test_file(rel: str, patterns: list[str]) -> bool:
    """`rel` (a relative POSIX path) lies in a directory named like a "name/" pattern or has a file
    name (or whole path) matching one of the other patterns."""
    parts = rel.split("/")
    for pattern in patterns:
        if pattern.endswith("/"):
            if any(fnmatch.fnmatch(d, pattern[:-1]) for d in parts[:-1]):
                return True
        elif fnmatch.fnmatch(parts[-1], pattern) or fnmatch.fnmatch(rel, pattern):
            return True
    return False


def find_pyproject(start: str) -> str | None:
    current = Path(start).resolve()
    if current.is_file():
        current = current.parent
    for directory in (current, *current.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return str(candidate)
    return None


def _codes(value, key: str, source: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: [tool.jaxopt-audit] {key} must be a list of strings")
    return [v.strip() for v in value]


def load_config(pyproject: str | None) -> Config:
    if pyproject is None:
        return Config()
    try:
        with open(pyproject, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{pyproject}: cannot read configuration: {exc.strerror or exc}; "
                          "fix the file or pass --no-config") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{pyproject}: not valid TOML ({exc}); fix the file or pass --no-config") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):  # `tool = 3`
        raise ConfigError(f"{pyproject}: `tool` must be a table ([tool.jaxopt-audit]), "
                          f"not {type(tool).__name__}; fix the file or pass --no-config")
    section = tool.get("jaxopt-audit", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{pyproject}: [tool.jaxopt-audit] must be a table")
    known = {"select", "extend-select", "ignore", "exclude", "extend-include", "per-file-ignores",
             "test-files", "test-files-ignore"}
    unknown = set(section) - known
    if unknown:
        raise ConfigError(f"{pyproject}: unknown [tool.jaxopt-audit] key(s) {', '.join(sorted(unknown))}; "
                          f"known: {', '.join(sorted(known))}")
    per_file = section.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{pyproject}: [tool.jaxopt-audit] per-file-ignores must be a table")
    return Config(
        select=_codes(section["select"], "select", pyproject) if "select" in section else None,
        extend_select=_codes(section.get("extend-select", []), "extend-select", pyproject),
        ignore=_codes(section.get("ignore", []), "ignore", pyproject),
        exclude=_codes(section.get("exclude", []), "exclude", pyproject),
        extend_include=_codes(section.get("extend-include", []), "extend-include", pyproject),
        per_file_ignores={k: _codes(v, f"per-file-ignores.{k}", pyproject) for k, v in per_file.items()},
        test_files=_codes(section.get("test-files", TEST_FILES), "test-files", pyproject),
        test_files_ignore=_codes(section.get("test-files-ignore", TEST_FILES_IGNORE), "test-files-ignore",
                                 pyproject),
        source=pyproject,
        root=str(Path(pyproject).parent),
    )
