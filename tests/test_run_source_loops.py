"""The innermost function and loop around a line of the user's source."""

from __future__ import annotations

from pathlib import Path

from jaxopt_audit.runtime.run.sites import SourceLine
from jaxopt_audit.runtime.run.source_loops import enclosing, loop_carries_into_call

SOURCE = '''\
def outer(xs):
    total = 0
    for x in xs:
        def inner(y):
            for _ in range(3):
                y = y + 1
            return y
        total += inner(x)
    return total


while True:
    break
'''


def test_the_innermost_function_and_its_own_loop(tmp_path: Path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(SOURCE)
    found = enclosing(SourceLine(str(path), 6))
    assert (found.function, found.function_span, found.loop) == ("inner", (4, 7), (5, 6))
    # the loop of `outer` around the call, not the one inside `inner`
    found = enclosing(SourceLine(str(path), 8))
    assert (found.function, found.function_span, found.loop) == ("outer", (1, 9), (3, 8))
    found = enclosing(SourceLine(str(path), 2))
    assert (found.function, found.loop) == ("outer", None)
    found = enclosing(SourceLine(str(path), 13))
    assert (found.function, found.function_span, found.loop) == (None, None, (12, 13))


def test_a_file_that_does_not_parse_has_no_enclosing_loop(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n    pass\n")
    assert enclosing(SourceLine(str(path), 2)) == (None, None, None)


LOOPS = '''\
def fit(theta, xs):
    for _ in range(100):
        g = gradient(theta, xs)
        theta = theta - 0.1 * g
    total = 0.0
    for i in range(len(xs)):
        x = xs[i]
        total = total + per_example(params, x)
    while True:
        key, sub = split(key)
        step(sub)
'''


def test_a_loop_carries_a_state_into_a_call_when_it_reads_a_name_before_assigning_it(tmp_path: Path) -> None:
    path = tmp_path / "loops.py"
    path.write_text(LOOPS)
    # theta is read by the call before the loop assigns it: carried from the iteration before
    assert loop_carries_into_call(SourceLine(str(path), 3), (2, 4)) is True
    # x is made afresh each iteration and params is never assigned: independent items
    assert loop_carries_into_call(SourceLine(str(path), 8), (6, 8)) is False
    # sub comes from key, which the loop carries
    assert loop_carries_into_call(SourceLine(str(path), 11), (9, 11)) is False
    assert loop_carries_into_call(SourceLine(str(path), 10), (9, 11)) is True
    # no loop there: the source cannot tell
    assert loop_carries_into_call(SourceLine(str(path), 3), (1, 4)) is None
