"""The codes `jaxopt-audit run` reports, and the page of each code only `run` can find.

`run` reports JAX101, JAX102, JAX301 and JAX302, which the static scan also finds (their pages
are the rule files in `rules/`), and JAX103, which needs the program to run: whether a jitted
function compiles again depends on the values it is called with. Its page is here, shaped as a
rule's page (`Rule.markdown`), so `jaxopt-audit rule JAX103` prints it like any other. No JAX
import: the `rule` command must not need the runtime extra.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimeRulePage:
    """A code found only at run time: its metadata and documentation."""

    code: str
    name: str
    severity: str
    summary: str
    fix: str
    doc: str  # the sections of a rule's docstring: What it does, Why is this bad?, How to fix, ...
    example: str
    instead: str

    def markdown(self) -> str:
        """The page as `jaxopt-audit rule CODE` prints a rule's."""
        parts = [f"# {self.code} {self.name} ({self.severity})", "", self.summary, "", self.doc.strip(),
                 "", "## Example", "```python", self.example.strip(), "```",
                 "", "## Use instead", "```python", self.instead.strip(), "```"]
        return "\n".join(parts) + "\n"


JAX103 = RuntimeRulePage(
    code="JAX103",
    name="recompile-on-changing-input",
    severity="warning",
    summary="A jitted function compiled again and again because an input's shape, dtype, weak "
            "type, static value or structure changed between calls (found at run time).",
    fix="Keep the arguments' shapes, dtypes and static values the same from call to call (pad or "
        "bucket sizes, cast to one dtype, pass typed arrays).",
    doc="""
## What it does
Found at run time only, by `jaxopt-audit run`: the static scan cannot know the values a
function will be called with. `run` counts every compilation of every jitted function and asks
JAX why each one after the first happened (`jax_explain_cache_misses`). A function compiled at
least three times in one run, for a reason other than a new wrapper (that is JAX102), is
reported at the call that missed the cache, with the argument that changed and how: its shape,
its dtype, its weak type (a Python scalar one call, an array the next), a static argument's
value, or the structure of a pytree (keys, lengths, `None` entries).

## Why is this bad?
Every cache miss traces the Python function and compiles it with XLA again: tens of
milliseconds to seconds each, on the program's thread, with the device idle. A batch sliced to
a length that varies per step (the last partial batch of every epoch, sequences of every
length), a step counter passed as a static argument, or `lr` alternating between a Python
float and an array turns a function compiled once into one compiled on most calls.

## How to fix
Give the argument one shape (pad to a fixed size, or bucket lengths into a few sizes; drop or
pad the last partial batch), one dtype (cast before the call), and one type (pass
`jnp.float32(x)` rather than a Python scalar one call and an array the next). Make a static
argument that takes many values a traced array instead, or limit its values to a small set.
Keep a pytree argument's structure the same on every call.

## Measured
`run` reports the compile time of the recompilations themselves: what fixing them saves, at
most, on the program's thread.
""",
    example="""
import jax
import jax.numpy as jnp

@jax.jit
def loss(w, batch):
    return jnp.mean((batch @ w) ** 2)

w = jnp.ones((8, 1))
data = jnp.ones((1000, 8))
losses = [loss(w, data[:size]) for size in (32, 48, 64, 80, 96)]  # a new shape each call: 5 compilations
print(jnp.stack(losses))
""",
    instead="""
import jax
import jax.numpy as jnp

@jax.jit
def loss(w, batch, mask):
    return jnp.sum(mask * (batch @ w)[:, 0] ** 2) / jnp.sum(mask)

w = jnp.ones((8, 1))
data = jnp.ones((1000, 8))
# one padded shape, the real size in a mask: compiled once
losses = [loss(w, data[:96], jnp.arange(96) < size) for size in (32, 48, 64, 80, 96)]
print(jnp.stack(losses))
""",
)

RUNTIME_ONLY: dict[str, RuntimeRulePage] = {JAX103.code: JAX103}

# every code `run` reports, with its stable name (the static rules' names for the others)
RUN_CODES: dict[str, str] = {
    "JAX101": "missing-jit",
    "JAX102": "jit-in-loop",
    JAX103.code: JAX103.name,
    "JAX301": "host-sync-in-step",
    "JAX302": "host-to-device-in-step",
}


def runtime_page(code: str) -> str | None:
    """The page of a code only `run` finds (`JAX103`), as markdown; None for any other code."""
    page = RUNTIME_ONLY.get(code.upper())
    return page.markdown() if page is not None else None
