"""The semantic model of one file: what it is, built once, and the facts derived from it.

`core.py` builds the model in one walk and a few fixpoints (bindings, jitted and traced
functions, static parameters, arrays, step loops). The modules beside it each answer one family
of questions from it; a question asked of the whole file is a `@fact` (facts.py), computed once
per model and shared by every rule that asks:

- `tracers.py`: which values of traced code are certainly tracers.
- `traced.py`: which functions JAX certainly runs on tracers; array evidence for their values.
- `per_step.py`: which functions execute once per step, and why (messages name the reason).
- `eager.py`: which functions run eagerly, do host work, or dispatch a step loop from Python.
- `loops.py`: what a loop carries and iterates, and its literal trip count.
- `host_loops.py`: host loops around compiled work, and what they read back.
- `host_reads.py`: which reads in a step loop bring a device value to the host, and which stall.
- `host_values.py`: which values a step loop hands to JAX are NumPy data on the host.
- `timing.py`: timed regions and which calls or functions wait for the device.
- `keys.py`: PRNG key flow: splits, uses and reuses.

Rules import the model's types from `jaxopt_audit.static` and ask these modules; none walks
scopes or lists API names of its own (those live in `static/knowledge/apis.py`).
"""

from .core import Assignment, Callee, ClassInfo, Function, Loop, SemanticModel, Site
from .facts import FACTS, fact

__all__ = ["FACTS", "Assignment", "Callee", "ClassInfo", "Function", "Loop", "SemanticModel", "Site", "fact"]
