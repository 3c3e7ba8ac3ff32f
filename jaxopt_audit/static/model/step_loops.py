"""Step loops: which loops drive JAX work once per step (leaf loops doing work, epochs around them,
walks over a container inside a step), and which sites Python dispatches once per step."""


from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from ..knowledge import apis
from ..syntax.walk import names_in

if TYPE_CHECKING:
    pass
from .index import Function, Loop, Site
from .jax_work import JaxWork


class StepLoops(JaxWork):
    def _mark_step_loops(self) -> None:
        # which functions contain step loops (for epoch loops around a per-epoch function)
        for _ in range(2):
            for fn in self.functions:
                for loop in fn.loops:
                    if fn.traced:
                        continue
                    loop.is_step = self._loop_does_jax_work(loop)
            for fn in self.functions:
                fn.contains_step_loop = any(loop.is_step and not self.walks_structure(loop)
                                            for loop in fn.loops) or any(
                    (c := self.callee(s.node, fn).function) is not None and c is not fn and c.contains_step_loop
                    for s in fn.calls)
        scanning = self._scans_steps()
        for fn in self.functions:
            for loop in fn.loops:
                if not loop.is_step:
                    continue
                # an epoch loop: it holds another step loop, or runs a compiled scan per iteration
                loop.is_epoch = any(child.is_step and not self.walks_structure(child)
                                    for child in self._descendants(loop)) or any(
                    ((c := self.callee(s.node, fn).function) is not None
                     and (c.contains_step_loop or (c in scanning and c is not fn)))
                    or self.resolve(s.node.func) in apis.SCAN_LIKE
                    for s in fn.calls if loop.encloses(s.loop))
        # per-step functions: called unguarded from a leaf step loop, transitively, untraced
        work: list[Function] = []
        for fn in self.functions:
            for site in fn.calls:
                if site.loop is None or site.guarded or not site.loop.is_step or site.loop.is_epoch:
                    continue
                target = self.callee(site.node, fn).function
                if target is not None and not target.traced and not target.contains_step_loop:
                    target.step_call_sites.append(site)
                    if not target.per_step:
                        target.per_step = True
                        work.append(target)
        while work:
            fn = work.pop()
            for site in fn.calls:
                if site.guarded:
                    continue
                target = self.callee(site.node, fn).function
                if target is not None and not target.traced and not target.per_step \
                        and not target.contains_step_loop:
                    target.per_step = True
                    target.step_call_sites.extend(fn.step_call_sites[:1])
                    work.append(target)

    def _scans_steps(self) -> set[Function]:
        """The functions whose call runs a compiled loop over steps: those that scan, and their
        callers, but not through a function that is differentiated (`jax.grad(loss)`): a scan in
        a loss is the rollout its forward and backward passes run, part of one training step,
        and a loop calling that gradient every iteration still steps once per iteration."""
        differentiated = {ref for fn in self.functions for s in fn.calls
                          if self.resolve(s.node.func) in apis.GRADIENT_TRANSFORMS and s.node.args
                          and (ref := self.function_ref(s.node.args[0].value, fn)) is not None}
        scanning = {fn for fn in self.functions if fn.uses_scan and fn not in differentiated and any(
            self.callee(s.node, fn).qualname in apis.SCAN_LIKE or self._library_scan(s.node, fn)
            for s in fn.calls)}
        changed = True
        while changed:
            changed = False
            for fn in self.functions:
                if fn in scanning or not fn.uses_scan or fn in differentiated:
                    continue
                for s in fn.calls:
                    callee = self.callee(s.node, fn)
                    if callee.transform in apis.GRADIENT_TRANSFORMS:
                        continue
                    if (callee.function or self._transformed(s.node, fn)) in scanning:
                        scanning.add(fn)
                        changed = True
                        break
        return scanning

    def walks_structure(self, loop: Loop) -> bool:
        """A loop over a container's entries, not over steps: `for k in params: params[k] ...`,
        `d.items()`, `jax.tree.leaves(t)`. Such a loop inside a step (a hand-written optimizer
        update per parameter) does not make the step a loop nest of its own."""
        node = loop.node
        if not isinstance(node, cst.For):
            return False
        it = node.iter
        if isinstance(it, cst.Call):
            if isinstance(it.func, cst.Attribute) and it.func.attr.value in ("items", "keys", "values") \
                    and self.resolve(it.func) is None:
                return True
            if self.resolve(it.func) in ("builtins.zip", "builtins.enumerate"):
                # `zip(params, grads, state)`: the layers of a pytree, walked side by side
                return any(isinstance(a.value, cst.Name) and apis.STRUCTURE_NAMES.search(a.value.value)
                           for a in it.args if a.keyword is None)
            return self.resolve(it.func) in apis.TREE_LEAVES
        if isinstance(it, cst.Name):  # `for k in params:` indexing `params[k]`
            targets = set(loop.targets)
            return any(loop.encloses(s.loop) and isinstance(s.node.value, cst.Name)
                       and s.node.value.value == it.value
                       and any(set(names_in(e.slice)) & targets for e in s.node.slice)
                       for s in loop.function.subscripts)
        return False

    def _descendants(self, loop: Loop) -> Iterator[Loop]:
        for child in loop.children:
            yield child
            yield from self._descendants(child)

    def _loop_does_jax_work(self, loop: Loop) -> bool:
        fn = loop.function
        return any(loop.encloses(site.loop) and self.call_work(site.node, fn) is not None
                   for site in fn.calls)

    def dispatched_per_step(self, site: Site) -> bool:
        """Python dispatches the site once per step: host code in a leaf step loop (unguarded),
        or in a host function called every step, outside any loop of its own and unguarded.
        Traced code and compiled loop bodies run every step too, but are not dispatched by
        Python: `per_step.why_every_step` covers them, with the reason."""
        if site.guarded:
            return False
        if site.loop is not None:
            loop = self._stepping_loop(site.loop)
            return loop.is_step and not loop.is_epoch
        return site.function.per_step

    def _stepping_loop(self, loop: Loop) -> Loop:
        """The loop whose iterations are the steps `loop`'s body runs in: itself, or, for a walk
        over a container's entries inside a step loop (`for k in totals: totals[k] +=
        float(metrics[k])` after each step), the step loop around it: the walk runs every step."""
        parent = loop.parent
        if not loop.is_step and parent is not None and parent.is_step and not parent.is_epoch \
                and self.walks_structure(loop):
            return parent
        return loop

    def step_loop_of(self, site: Site) -> Loop | None:
        """The loop that makes `site` run per step (its own, or a caller's for per-step functions)."""
        stepping = self._stepping_loop(site.loop) if site.loop is not None else None
        if stepping is not None and stepping.is_step:
            return stepping
        fn = site.function
        if fn.per_step and fn.step_call_sites:
            return fn.step_call_sites[0].loop
        return None

