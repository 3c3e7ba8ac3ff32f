"""`[tool.jaxopt-audit]` in the nearest pyproject.toml: select, ignore, exclude, per-file-ignores."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path


class ConfigError(Exception):
    pass


@dataclass
class Config:
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    extend_include: list[str] = field(default_factory=list)  # more files to scan (MyST notebooks)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    source: str | None = None  # the pyproject.toml it came from
    root: str = "."  # patterns are relative to the config's directory

    def ignored_for(self, path: str) -> list[str]:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))
        rel = Path(rel).as_posix()
        out: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(os.path.basename(rel), pattern):
                out.extend(codes)
        return out


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
    known = {"select", "extend-select", "ignore", "exclude", "extend-include", "per-file-ignores"}
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
        source=pyproject,
        root=str(Path(pyproject).parent),
    )
