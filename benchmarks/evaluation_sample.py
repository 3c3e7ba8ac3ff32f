"""Sample findings for judging: at most N per rule, one per repository first, reproducibly.

    jaxopt-audit scan repos/ --format json -o findings.json --no-cache
    python benchmarks/evaluation_sample.py findings.json --per-rule 12 --seed 0 > sample.md

`repos/` holds one folder per repository of an evaluation set; a finding's repository is the
first component of its path below the common root of all the findings. The sample is a markdown
checklist with a FACT / USEFUL / WORTH line per finding for the judges (docs/evaluation.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import defaultdict
from typing import Any


def repository_of(path: str, root: str) -> str:
    return os.path.relpath(path, root).split(os.sep)[0]


def sample(findings: list[dict[str, Any]], per_rule: int, seed: int) -> list[dict[str, Any]]:
    """Per rule, shuffled with `seed`, taken round-robin over repositories, `per_rule` at most."""
    if not findings:
        return []
    root = os.path.commonpath([os.path.dirname(f["path"]) or "." for f in findings])
    by_rule: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for finding in sorted(findings, key=lambda f: (f["code"], f["path"], f.get("cell", 0), f["line"], f["column"])):
        by_rule[finding["code"]][repository_of(finding["path"], root)].append(finding)
    rng = random.Random(seed)
    chosen = []
    for code in sorted(by_rule):
        queues = [by_rule[code][name] for name in sorted(by_rule[code])]
        for queue in queues:
            rng.shuffle(queue)
        rng.shuffle(queues)
        picked: list[dict[str, Any]] = []
        while len(picked) < per_rule and any(queues):
            for queue in queues:
                if queue and len(picked) < per_rule:
                    picked.append(queue.pop())
        chosen += picked
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("findings", help="the JSON of `jaxopt-audit scan --format json`")
    parser.add_argument("--per-rule", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        with open(args.findings) as handle:
            findings = json.load(handle)["findings"]
    except (OSError, ValueError, KeyError) as error:
        print(f"cannot read findings from {args.findings}: {error}", file=sys.stderr)
        return 2
    for finding in sample(findings, args.per_rule, args.seed):
        cell = f":cell {finding['cell']}" if "cell" in finding else ""
        print(f"- [ ] `{finding['path']}{cell}:{finding['line']}` {finding['code']}: {finding['message']}")
        print("  FACT: ? USEFUL: ? WORTH: ? (yes / no / debatable, and why)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
