"""Importing a user's Python file as a module: a `--rules-dir` rule file, a pipeline folder's
`__init__.py`. One way, shared by `static` (rules) and `runtime` (pipelines); a leaf module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


class NotImportable(ImportError):
    """The file cannot be made into a module at all (no loader for it)."""


def import_file(name: str, path: Path, package_dir: Path | None = None) -> ModuleType:
    """Run `path` as the module `name` (registered in sys.modules, so its own imports of `name`
    and, for a package, of `name.sub` resolve). Whatever the file raises propagates, and the
    half-made module is dropped; the caller turns it into its own one-line error."""
    locations = [str(package_dir)] if package_dir is not None else None
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=locations)
    if spec is None or spec.loader is None:
        raise NotImportable(f"{path}: cannot be imported as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
