"""Per-file isolation: whatever one file does to the analysis stays that file's problem.

Valid Python can nest deeper than the default recursion limit allows a recursive walk to
follow (`x + x + ...` with 1,000 terms, `.a` chained 1,000 times): CPython itself compiles
expressions about 3,000 levels deep. Each file is therefore parsed and analysed in a thread of
its own with a large stack and a raised recursion limit; the stack is reserved address space,
committed only as deep recursion touches it. What is still too deep, and any other exception,
is turned by the caller into that file's `errors` entry.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STACK_BYTES = 1 << 30
# Python frames per nesting level are a handful; this follows CPython's compile limit with room
# to spare and stays far inside STACK_BYTES (a C-level Python frame is well under 10 KiB).
RECURSION_LIMIT = 60_000

_limit_lock = threading.Lock()


def call_with_deep_stack(fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` in a fresh thread with STACK_BYTES of stack; its exception is re-raised here.

    A fresh thread per call (not a long-lived one) so that nothing is left running when the
    engine forks its worker processes. The recursion limit is process-wide in CPython 3.11, so it
    is raised only while a deep call runs and put back afterwards.
    """
    outcome: list[object] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            failure.append(exc)

    with _limit_lock:
        previous_limit = sys.getrecursionlimit()
        try:
            previous_stack = threading.stack_size(STACK_BYTES)
            sys.setrecursionlimit(max(previous_limit, RECURSION_LIMIT))
        except (ValueError, RuntimeError):  # the platform refuses the size: default stack and limit
            previous_stack = threading.stack_size()
        try:
            worker = threading.Thread(target=run, name="jaxopt-audit-file", daemon=True)
            worker.start()
        finally:
            threading.stack_size(previous_stack)
        try:
            worker.join()
        finally:
            sys.setrecursionlimit(previous_limit)
    if failure:
        raise failure[0]
    return outcome[0]  # type: ignore[return-value]


def special_file_kind(path: str) -> str | None:
    """None for a regular file (after links); else what it is, for a message. Never opens it:
    opening a FIFO blocks until someone writes to it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # reading it will report why
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"
