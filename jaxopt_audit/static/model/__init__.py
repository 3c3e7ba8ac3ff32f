"""The semantic model of one file: what it is, built once, and the facts derived from it.

`core.SemanticModel` is built in one walk (`builder.py`, into the index of `index.py`) and a few
fixpoints, one concern per layer, each asking only the layers below it: name resolution
(`resolution.py`), value kinds (`value_kinds.py`), jit and traced marks (`jit_marks.py`), JAX
work and arrays (`jax_work.py`), step loops (`step_loops.py`). The modules beside them each
answer one family of questions from the built model; a question asked of the whole file is a
`@fact` (facts.py), computed once per model and shared by every rule that asks, and per-node
answers live in the same table (`facts.answers`):

- `tracers.py`: which values of traced code are certainly tracers.
- `traced.py`: which functions JAX certainly runs on tracers; array evidence for their values.
- `per_step.py`: which functions execute once per step, and why (messages name the reason).
- `eager.py`: which functions run eagerly, do host work, or dispatch a step loop from Python.
- `eager_steps.py`: gradient steps that run eagerly where they are written (a derivative in a
  step loop's body, a whole training step in a function nothing jits).
- `loops.py`: what a loop carries and iterates, and its literal trip count.
- `host_loops.py`: host loops around compiled work, and what they read back.
- `host_reads.py`: which reads in a step loop bring a device value to the host, and which stall.
- `host_values.py`: which values a step loop hands to JAX are NumPy data on the host.
- `timing.py`: timed regions and which calls or functions wait for the device.
- `timed_work.py`: what a timed region measures: a first (compiling) call, a whole run, an
  epoch over a host stream, a `timeit` statement.
- `keys.py`: PRNG key flow: splits, uses and reuses.
- `jit_construction.py`: where a jit wrapper is built, what it wraps, how many calls a build serves.
- `memoisation.py`: code that runs once: setup methods, memoised functions, memoisation guards.
- `configurations.py`: loops over configurations (a program each) or schedules (one program).
- `independence.py`: a loop's items, and whether its iterations are independent of each other.
- `mapped_arguments.py`: which arguments a loop's items reach, and whether vmap can map them.
- `key_pairs.py`: whether two uses of one key draw numbers that matter together.
- `gradients.py`: where gradients are computed, the names that hold them, a descent step's shape.
- `side_effects.py`: the containers, iterators and prints traced code reaches outside its trace.
- `deprecated_uses.py`: uses of deprecated, removed and legacy JAX APIs and keywords.

Rules import the model's types from `jaxopt_audit.static` and ask these modules; none walks
scopes or lists API names of its own (those live in `static/knowledge/apis.py`).
"""

from .core import SemanticModel
from .facts import FACTS, fact
from .index import Assignment, Callee, ClassInfo, Function, Loop, Site

__all__ = ["FACTS", "Assignment", "Callee", "ClassInfo", "Function", "Loop", "SemanticModel", "Site", "fact"]
