"""`jaxopt-audit report`: write the markdown case study of bench or run results."""

from __future__ import annotations

import argparse
import sys

from ..exit_codes import OK as EXIT_OK  # noqa: E402
from ..exit_codes import USAGE as EXIT_ERROR  # noqa: E402
from ..report import run_study
from ..report.casestudy import ReportError, write_report
from ..static.pipeline.engine import scan_for_report
from ..static.pipeline.registry import load_rules


def report_command(args: argparse.Namespace) -> int:
    """Entry point of `jaxopt-audit report` (options are defined in cli.py)."""
    try:
        own = run_study.load(args.results)  # `run --json` results: the study of the user's rewrite
        if own is not None:
            md_path, pngs = run_study.write_study(own, args.output)
        else:
            names = {rule.CODE: rule.NAME for rule in load_rules()}
            md_path, pngs = write_report(args.results, args.output, scan=scan_for_report, names=names)
    except ReportError as exc:
        print(f"jaxopt-audit report: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # the checked path changed under us, or the disk is full
        print(f"jaxopt-audit report: cannot write {exc.filename or 'the report'}: {exc.strerror or exc}; "
              "choose a writable path with -o", file=sys.stderr)
        return EXIT_ERROR
    print(f"jaxopt-audit report: wrote {md_path} and {', '.join(str(p) for p in pngs)}", file=sys.stderr)
    return EXIT_OK
