"""The codes `jaxopt-audit run` reports, with their stable names.

Each is a rule of the catalog with its page in `rules/` (`jaxopt-audit rule CODE`): the static
scan finds what the file shows of it, `run` what happened. JAX103 (a function compiled again for
each new input shape, dtype or static value) is mostly a run-time finding: its rule page says
what `run` measures. No JAX import: the names are read without the runtime extra.
"""

from __future__ import annotations

# every code `run` reports, with its rule's stable name
RUN_CODES: dict[str, str] = {
    "JAX101": "missing-jit",
    "JAX102": "jit-in-loop",
    "JAX103": "recompile-on-changing-input",
    "JAX201": "loop-to-scan",
    "JAX202": "loop-to-vmap",
    "JAX301": "host-sync-in-step",
    "JAX302": "host-to-device-in-step",
}
