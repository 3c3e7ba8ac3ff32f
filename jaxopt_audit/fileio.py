"""Writing user files safely, and checking before the work starts that they can be written.

One policy for every output path (`scan -o`, `bench --out/--trace`, `run --json/--trace`,
`report -o`; docs/design.md "Files the tool writes"): a regular file is replaced atomically (written
next to its target, then renamed, so a reader or a crash never sees half a file); a symlink is
written through to its target, never replaced; a device, FIFO or other special file is written to
directly (`-o /dev/stdout`, `-o >(gzip > x)`); a directory where a file is expected, or a file
where a directory is expected, is an error. Nothing the user owns is replaced by something of
another kind.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from typing import Any


class OutputPathError(ValueError):
    """An output path that cannot be written: one line saying what, why and what to do."""


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _nearest_existing(path: str) -> tuple[str, os.stat_result | None]:
    """The deepest existing ancestor of `path` (following links) and its stat; a component that
    exists but is not a directory stops the walk there."""
    current = os.path.abspath(path)
    while True:
        parent = os.path.dirname(current)
        try:
            return parent, os.stat(parent)
        except FileNotFoundError:
            if parent == current:
                return parent, None
            current = parent
        except NotADirectoryError:
            current = parent  # a file higher up: keep climbing until something exists
        except OSError:
            return parent, None


def _probe_writable(directory: str, option: str, path: str) -> None:
    """Creating a file is the only reliable test (/proc and read-only mounts pass os.access as root)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".jaxopt-audit-probe.", dir=directory)
    except OSError as exc:
        raise OutputPathError(f"cannot write {option} {path}: cannot create files in {directory} "
                              f"({_why(exc)}); choose a writable location") from None
    os.close(fd)
    os.unlink(probe)


def _check_missing_parent(path: str, option: str) -> None:
    """`path` does not exist: its parents must be directories we can create things in."""
    ancestor, info = _nearest_existing(path)
    if info is None:
        raise OutputPathError(f"cannot write {option} {path}: {ancestor} cannot be read; "
                              "choose a writable location")
    if not stat.S_ISDIR(info.st_mode):
        raise OutputPathError(f"cannot write {option} {path}: {ancestor} is a file, not a directory; "
                              "choose another path")
    _probe_writable(ancestor, option, path)


def _existing(path: str, option: str) -> os.stat_result | None:
    """What is at `path` (through a symlink, to what will actually be written), or None when
    nothing is and a new file or directory can be created there; else OutputPathError."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        target = os.path.realpath(path) if os.path.islink(path) else path  # a dangling link
        _check_missing_parent(target, option)
        return None
    except NotADirectoryError:
        ancestor, _ = _nearest_existing(path)
        raise OutputPathError(f"cannot write {option} {path}: {ancestor} is a file, not a directory; "
                              "choose another path") from None
    except OSError as exc:
        raise OutputPathError(f"cannot write {option} {path}: {_why(exc)}; choose another path") from None


def check_output_file(path: str | os.PathLike, option: str) -> None:
    """Raise OutputPathError unless a file can be written at `path` (option names it: `-o`)."""
    path = os.fspath(path)
    if not path:
        raise OutputPathError(f"{option} needs a file name")
    info = _existing(path, option)
    if info is None:
        return
    if stat.S_ISDIR(info.st_mode):
        raise OutputPathError(f"cannot write {option} {path}: it is a directory; name a file "
                              "(inside it, or elsewhere)")
    if stat.S_ISREG(info.st_mode):
        if not os.access(path, os.W_OK):
            raise OutputPathError(f"cannot write {option} {path}: permission denied; choose a writable path")
        real = os.path.realpath(path)
        if not os.access(os.path.dirname(real), os.W_OK):
            return  # written in place (see write_text_atomic)
        _probe_writable(os.path.dirname(real), option, path)
        return
    if not os.access(path, os.W_OK):
        raise OutputPathError(f"cannot write {option} {path}: permission denied; choose a writable path")


def check_output_dir(path: str | os.PathLike, option: str) -> None:
    """Raise OutputPathError unless `path` is, or can be made, a writable directory."""
    path = os.fspath(path)
    if not path:
        raise OutputPathError(f"{option} needs a directory name")
    info = _existing(path, option)
    if info is None:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise OutputPathError(f"cannot write {option} {path}: it exists and is not a directory; "
                              f"{option} needs a directory (it will be created if missing)")
    _probe_writable(path, option, path)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` under the policy above (the name is kept for its callers)."""
    path = os.fspath(path)
    try:
        info: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        with open(path, "w", encoding="utf-8") as handle:  # a device or FIFO: it is the destination
            handle.write(text)
        return
    target = os.path.realpath(path)  # through a symlink: the link stays, its target is replaced
    directory = os.path.dirname(target)
    os.makedirs(directory, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except PermissionError:
        if info is None:
            raise
        with open(target, "w", encoding="utf-8") as handle:  # a writable file in a read-only directory
            handle.write(text)
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        # mkstemp makes 0600 files: keep the replaced file's mode, else the user's umask's
        os.chmod(tmp, stat.S_IMODE(info.st_mode) if info is not None else _default_mode())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, allow_nan=False) + "\n")
