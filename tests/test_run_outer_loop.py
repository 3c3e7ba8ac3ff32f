"""Which loop a jitted call inside a per-item helper is reported at, and how: a loop whose items
are independent is one to vmap; one that hands its state to the helper every iteration is a
chain, one to scan."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from jaxopt_audit.runtime.run.findings import _outer_loop
from jaxopt_audit.runtime.run.instrument import FunctionRecord
from jaxopt_audit.runtime.run.sites import SourceLine

SOURCE = '''\
def relax(x, f):
    x = x + 0.01 * f
    f = forces(x)
    return x, f


def score(item):
    return forces(item)


def main(x, f, items):
    for _ in range(100):
        x, f = relax(x, f)
    for item in items:
        total = score(item)
'''


def _record(path: Path, inner: int, outer: int) -> FunctionRecord:
    record = FunctionRecord("forces", str(path), 1, "forces", calls=100)
    record.sampled_outer_sites = Counter({(SourceLine(str(path), inner), SourceLine(str(path), outer)): 20})
    return record


def test_a_loop_carrying_its_state_into_the_helper_is_a_scan_at_that_loop(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(SOURCE)
    found = _outer_loop(_record(path, 3, 13), SourceLine(str(path), 3), 20)
    assert found is not None
    site, code, fix, how = found
    assert (site.line, code) == (13, "JAX201")
    assert fix.startswith("run the loop as lax.scan (or lax.fori_loop) with relax as its body")
    assert how.endswith("once per iteration of the loop here, which carries its state into it")


def test_a_loop_over_independent_items_is_a_vmap_at_that_loop(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(SOURCE)
    found = _outer_loop(_record(path, 8, 15), SourceLine(str(path), 8), 20)
    assert found is not None
    site, code, fix, _ = found
    assert (site.line, code) == (15, "JAX202")
    assert fix.startswith("jax.vmap score over the items of this loop")
