"""The exit statuses every command uses, and the one error type for a mistake in the command
line or its input (printed as one line, exit status USAGE)."""

from __future__ import annotations

OK = 0
FINDINGS = 1  # scan: findings at or above the fail level; bench: a stage failed its check
USAGE = 2  # a usage error, bad input or a file that could not be read or written
INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


class UsageError(Exception):
    """A mistake in the command line or its input: printed as one line, exit status USAGE."""
