"""`jaxopt-audit report`: write the markdown case study of bench or run results."""

from __future__ import annotations

import argparse
import sys

from ..exit_codes import OK as EXIT_OK  # noqa: E402
from ..exit_codes import USAGE as EXIT_ERROR  # noqa: E402
from ..report.casestudy import ReportError, write_report


def report_command(args: argparse.Namespace) -> int:
    """Entry point of `jaxopt-audit report` (options are defined in cli.py)."""
    try:
        md_path, pngs = write_report(args.results, args.output)
    except ReportError as exc:
        print(f"jaxopt-audit report: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # the checked path changed under us, or the disk is full
        print(f"jaxopt-audit report: cannot write {exc.filename or 'the report'}: {exc.strerror or exc}; "
              "choose a writable path with -o", file=sys.stderr)
        return EXIT_ERROR
    print(f"jaxopt-audit report: wrote {md_path} and {', '.join(str(p) for p in pngs)}", file=sys.stderr)
    return EXIT_OK
