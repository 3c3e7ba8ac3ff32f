"""JAX601 deprecated-api: the data checked against the installed JAX (so the list cannot
silently rot), and the rule's matching beyond its embedded examples."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
import textwrap
import warnings

import pytest

from jaxopt_audit.static.autofix.apply import fix_source
from jaxopt_audit.static.knowledge.deprecations import (
    BY_NAME,
    CURATED,
    DEPRECATIONS,
    JAX_TABLES,
    KEYWORDS,
    STATUSES,
    older_spelling,
)
from jaxopt_audit.static.pipeline.engine import scan_source

from conftest import rules_with_code, scan_text

RULE = rules_with_code("JAX601")
LEGACY = rules_with_code("JAX602")
MISSING, PRESENT, WARNS, UNKNOWN = "missing", "present", "warns", "unknown"


def _resolve(name: str) -> str:
    """How `name` fares in the installed JAX: missing, present, warns (DeprecationWarning), or
    unknown (a module failed to import for another reason, e.g. an optional dependency)."""
    parts = name.split(".")
    module = None
    end = len(parts)
    while end > 0:
        dotted = ".".join(parts[:end])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(dotted)
            break
        except ModuleNotFoundError as exc:
            if exc.name is None or not dotted.startswith(exc.name) and not exc.name.startswith(dotted):
                return UNKNOWN  # a third-party dependency is missing, not the JAX module
            end -= 1
        except ImportError:
            return UNKNOWN
    if module is None:
        return MISSING
    obj = module
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for attribute in parts[end:]:
            try:
                obj = getattr(obj, attribute)
            except AttributeError:
                return MISSING
    return WARNS if any(issubclass(w.category, DeprecationWarning) for w in caught) else PRESENT


def _jax_tables() -> dict[str, str]:
    """name -> "removed"/"deprecated" for every `_deprecations` entry of the installed JAX."""
    jax = pytest.importorskip("jax")
    out: dict[str, str] = {}
    names = ["jax"] + [info.name for info in pkgutil.walk_packages(jax.__path__, "jax.", onerror=lambda name: None)]
    for module_name in names:
        if module_name.startswith("jax._src") or ".tests" in module_name:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - optional dependencies (tensorflow, triton) may be absent
            continue
        table = getattr(module, "_deprecations", None)
        if isinstance(table, dict):
            for name, (_message, replacement) in table.items():
                out[f"{module_name}.{name}"] = "removed" if replacement is None else "deprecated"
    return out


def test_data_is_well_formed():
    assert len(BY_NAME) == len(DEPRECATIONS), "an API is listed twice"
    for entry in DEPRECATIONS:
        assert entry.status in STATUSES, entry
        assert entry.name.startswith(("jax.", "jaxlib.")), entry
        assert entry.replacement != entry.name, entry


@pytest.mark.slow
def test_every_deprecation_table_of_installed_jax_is_in_the_data():
    tables = _jax_tables()
    assert tables, "found no _deprecations tables: has JAX changed its mechanism?"
    missing = sorted(f"{name} ({status})" for name, status in tables.items() if name not in BY_NAME)
    assert not missing, "add these to jaxopt_audit/static/knowledge/deprecations.py: " + ", ".join(missing)
    wrong = sorted(f"{name}: JAX says {status}, data says {BY_NAME[name].status}"
                   for name, status in tables.items() if BY_NAME[name].status != status)
    assert not wrong, "; ".join(wrong)


@pytest.mark.slow
def test_statuses_match_the_installed_jax():
    pytest.importorskip("jax")
    problems = []
    for entry in DEPRECATIONS:
        outcome = _resolve(entry.name)
        if outcome == UNKNOWN:
            continue
        if entry.status == "removed" and outcome != MISSING:
            problems.append(f"{entry.name} is listed as removed but resolves ({outcome})")
        elif entry.status == "deprecated" and outcome == MISSING:
            problems.append(f"{entry.name} is listed as deprecated but is gone: mark it removed")
        elif entry.status == "legacy" and outcome != PRESENT:
            problems.append(f"{entry.name} is listed as legacy but {outcome}: update its status")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_replacements_exist_in_the_installed_jax():
    pytest.importorskip("jax")
    names = {e.replacement for e in DEPRECATIONS if re.fullmatch(r"jax(\.\w+)+", e.replacement)}
    assert "jax.tree.map" in names and "jax.random.key" in names
    # the spellings offered for a JAX older than the `jax.tree` module must exist too
    older = {older_spelling(n) for n in names} - {None}
    assert "jax.tree_util.tree_map" in older
    names |= older
    broken = sorted(n for n in names if _resolve(n) not in (PRESENT, UNKNOWN) or n in BY_NAME)
    assert not broken, "replacements that do not exist or are themselves deprecated: " + ", ".join(broken)


def test_curated_list_covers_rules_md():
    for name in ("jax.tree_map", "jax.tree_util.tree_multimap", "jax.random.PRNGKey", "jax.pmap",
                 "jax.experimental.pjit.pjit", "jax.experimental.maps", "jax.experimental.host_callback",
                 "jax.abstract_arrays", "jax.ShapedArray", "jax.numpy.DeviceArray"):
        assert name in BY_NAME, name
    assert {e.name for e in CURATED}.isdisjoint(e.name for e in JAX_TABLES)


def test_scan_side_does_not_import_jax():
    code = ("import sys; import jaxopt_audit.rules.jax601_deprecated_api, jaxopt_audit.static.knowledge.deprecations; "
            "assert 'jax' not in sys.modules, 'the JAX601 rule imported jax'")
    subprocess.run([sys.executable, "-c", code], check=True)


def _findings(source: str, rules=RULE):
    return [(f.line, f.severity, f.message) for f in scan_text(source, rules)]


def test_resolves_aliases_and_reports_where_the_name_is_spelled():
    found = _findings("""
        import jax as J
        import jax.numpy as np
        from jax import random, tree_util
        from jax.experimental import maps

        a = J.tree_leaves({"a": 1})
        b = isinstance(a, np.DeviceArray)
        c = tree_util.tree_multimap(lambda x, y: x, a, a)
        mesh = maps.Mesh(None, ("x",))
        d = random.KeyArray
    """)
    assert [(line, severity) for line, severity, _ in found] == [
        (4, "warning"), (6, "warning"), (7, "warning"), (8, "warning"), (9, "warning"), (10, "warning")]
    assert "`jax.tree.leaves`" in found[1][2]
    assert "`jax.sharding.Mesh`" in found[4][2]  # a member with its own entry, at its use


LEGACY_SOURCE = """
    import jax

    keys = [jax.random.PRNGKey(i) for i in range(3)]
    more = jax.random.PRNGKey(7)
    f = jax.pmap(lambda x: x * 2)
    g = jax.pmap(lambda x: x + 1)
"""


def test_legacy_apis_are_jax602_advice_once_per_file():
    assert _findings(LEGACY_SOURCE) == []  # not deprecated: not JAX601
    found = _findings(LEGACY_SOURCE, LEGACY)
    assert [(line, severity) for line, severity, _ in found] == [(3, "info"), (5, "info")]
    assert "(2 uses in this file)" in found[0][2] and "jax.random.key" in found[0][2]


def test_both_rules_ask_one_deprecations_api_and_split_its_uses_by_status():
    import libcst as cst

    from jaxopt_audit.static import SemanticModel, deprecated_uses

    source = textwrap.dedent(LEGACY_SOURCE) + "leaves = jax.tree_leaves({})\n"
    model = SemanticModel(cst.parse_module(source), source=source)
    uses = deprecated_uses(model)
    assert [u.entry.name for u in uses] == ["jax.random.PRNGKey"] * 2 + ["jax.pmap"] * 2 + ["jax.tree_leaves"]
    assert deprecated_uses(model) is uses  # asked once per model: the second rule shares the answer
    deprecated = [r.node for rule in RULE for r in rule().check(model)]
    legacy = [r.node for rule in LEGACY for r in rule().check(model)]
    assert deprecated == [uses[-1].node]
    assert legacy == [uses[0].node, uses[2].node]  # the first use of each legacy API


def test_no_rule_imports_another_rule():
    from pathlib import Path

    rules_dir = Path(__file__).resolve().parent.parent / "rules"
    offences = [p.name for p in sorted(rules_dir.glob("jax*.py"))
                if re.search(r"^\s*(from|import)\s+(jaxopt_audit\.)?rules\b", p.read_text(), re.M)]
    assert offences == []


def test_legacy_notice_is_off_by_default_and_on_by_its_code(tmp_path):
    import textwrap

    from jaxopt_audit.static.pipeline.config import Config
    from jaxopt_audit.static.pipeline.engine import scan_paths

    (tmp_path / "train.py").write_text(textwrap.dedent(LEGACY_SOURCE))

    def codes(**options):
        return sorted({f.code for f in scan_paths([str(tmp_path)], config=Config(), jobs=1, **options).findings})

    assert codes() == []
    assert codes(select=["JAX6"]) == []  # a prefix does not turn an opt-in rule on
    assert codes(extend_select=["JAX602"]) == ["JAX602"]
    assert codes(select=["ALL"]) == ["JAX602"]
    assert codes(extend_select=["JAX602"], ignore=["JAX6"]) == []


def test_deprecated_is_info_removed_is_warning():
    found = _findings("""
        from jax.experimental.shard_map import shard_map
        from jax.experimental.host_callback import id_tap
        import jax.core

        aval = jax.core.get_aval(1.0)
    """)
    assert [(line, severity) for line, severity, _ in found] == [(1, "info"), (2, "warning"), (5, "warning")]
    assert "jax.typeof" in found[2][2]


def test_quiet_on_current_apis_and_look_alikes():
    assert _findings("""
        import numpy as np
        import jax
        from jax import tree_util
        from .utils import tree_map
        from mylib.jax_compat import pmap

        def tree_leaves(tree):
            return tree_util.tree_leaves(tree)

        x = np.trapz([1.0, 2.0])
        y = jax.tree_util.tree_map(lambda v: v, {"a": 1})
        z = tree_map(lambda v: v, y)
        key = jax.random.key(0)
        f = pmap(lambda v: v)
        mesh = jax.make_mesh((1,), ("x",))
    """) == []


def test_quiet_on_version_compatibility_code():
    assert _findings("""
        import jax

        try:
            from jax.experimental import host_callback
        except ImportError:
            host_callback = None

        if hasattr(jax, "typeof"):
            typeof = jax.typeof
        else:
            typeof = jax.core.get_aval

        if jax.__version_info__ < (0, 4, 26):
            tree_map = jax.tree_map
        else:
            tree_map = jax.tree.map
    """) == []


def test_quiet_on_the_old_api_as_the_fallback_of_the_new_one():
    # the new spelling is tried first; the handler runs only on a JAX old enough to lack it,
    # where the old spelling exists
    assert _findings("""
        import jax
        from jax.extend import core as jex_core

        try:
            from jax import enable_x64
        except ImportError:
            from jax.experimental import enable_x64

        def opaque_state():
            try:
                get_state = jex_core.get_opaque_trace_state
            except AttributeError:
                get_state = jax.core.get_opaque_trace_state
            return get_state(convention="mine")
    """) == []
    # what runs after the fallback, whichever branch was taken, is checked as usual
    assert [line for line, _, _ in _findings("""
        import jax

        try:
            from jax import enable_x64
        except ImportError:
            enable_x64 = None
        finally:
            leaves = jax.tree_leaves({"a": 1})
    """)] == [8]


def test_a_broad_handler_around_imports_only_is_a_fallback_too():
    # `except Exception:` around nothing but imports catches a missing name: the old spelling
    # in the handler runs only on a JAX old enough to have it
    assert _findings("""
        try:
            from jax.sharding import get_abstract_mesh
        except Exception:
            def get_abstract_mesh():
                try:
                    from jax.interpreters.pxla import thread_resources
                except:
                    from jax.experimental.maps import thread_resources
                return thread_resources.env.physical_mesh
    """) == []
    # around other code a broad handler may be catching anything: the removed API fails there
    # on every call, and that is reported
    assert [line for line, _, _ in _findings("""
        import jax

        def total(tree):
            try:
                return sum(jax.tree_leaves(tree))
            except Exception:
                return 0
    """)] == [5]


def test_a_migration_says_what_changes_beyond_the_name():
    found = _findings("""
        from jax.experimental.shard_map import shard_map
        from jax.experimental.pjit import pjit
    """)
    assert len(found) == 2
    shard, pjit_ = (message for _, _, message in found)
    assert "not a rename" in shard and "check_vma" in shard and "keywords only" in shard
    assert "not a rename" in pjit_ and "jax.set_mesh" in pjit_
    # a plain rename says nothing more
    [(_, _, renamed)] = _findings("""
        import jax
        leaves = jax.tree_leaves({})
    """)
    assert "not a rename" not in renamed


def test_a_preprocessing_key_and_a_planned_pmap():
    found = _findings("""
        import jax
        from jax import numpy as jnp

        def preprocess_batch_jax(batch):
            x = batch['x']
            x = (x - jnp.mean(x)) / jnp.std(x)
            noise = jax.random.normal(jax.random.PRNGKey(0), x.shape) * 0.01
            return {'x': x + noise, 'y': batch['y']}

        def train_step(params, batch):
            return params

        p_train_step = jax.pmap(train_step, axis_name="devices")
    """, LEGACY)
    assert [(line, severity) for line, severity, _ in found] == [(7, "info"), (13, "info")]
    assert "jax.random.key" in found[0][2] and "shard_map" in found[1][2]


def test_a_removed_name_in_an_unevaluated_annotation_is_info_and_says_so():
    source = """
        import jax

        def sample(key: jax.random.KeyArray, n: int) -> jax.Array:
            return jax.random.normal(key, (n,))
    """
    [(_, evaluated_severity, evaluated_message)] = _findings(source)
    assert evaluated_severity == "warning" and "fails with AttributeError" in evaluated_message
    postponed = source.replace("import jax", "from __future__ import annotations\n        import jax")
    [(_, severity, message)] = _findings(postponed)
    assert severity == "info" and "fails no run" in message and "jax.Array" in message
    # outside annotations the same module's uses still fail at run time
    [(_, severity, _)] = _findings("""
        from __future__ import annotations
        import jax

        KeyType = jax.random.KeyArray
    """)
    assert severity == "warning"


def test_a_moved_module_names_its_new_home_not_a_different_library():
    # the example libraries moved with their API intact; optax and flax are other APIs
    found = _findings("""
        from jax.experimental import optimizers
        from jax.experimental import stax
    """)
    assert len(found) == 2
    optimizers_, stax_ = (message for _, _, message in found)
    assert "jax.example_libraries.optimizers" in optimizers_ and "optax" not in optimizers_
    assert "jax.example_libraries.stax" in stax_ and "flax" not in stax_


def test_the_mesh_context_migration_says_where_the_devices_of_the_mesh_are():
    [(_, _, message)] = _findings("""
        from jax.interpreters.pxla import thread_resources

        def devices():
            return thread_resources.env.physical_mesh.devices
    """)
    assert "jax.set_mesh" in message and "jax.sharding.get_mesh()" in message
    assert "axis names and sizes only" in message


def test_the_tree_module_replacement_names_the_version_it_needs():
    # `jax.tree` arrived in JAX 0.4.25: code that supports older versions needs `jax.tree_util`
    [(_, _, message)] = _findings("""
        import jax
        total = jax.tree_leaves({"a": 1})
    """)
    assert "`jax.tree.leaves`" in message and "0.4.25" in message and "`jax.tree_util.tree_leaves`" in message


def test_a_removed_name_imported_by_name_is_fixed_at_the_import():
    found = scan_text("""
        from jax import nn, tree_map

        def widths(params):
            return tree_map(lambda p: p.shape[-1], params)
    """, RULE)
    assert [f.line for f in found] == [1]
    assert found[0].fix.startswith("Change the import to `jax.tree.map`")


def test_device_put_replicated_says_how_to_keep_the_layout_pmap_expects():
    [(_, _, message)] = _findings("""
        import jax
        params = jax.device_put_replicated({"w": 1.0}, jax.local_devices())
    """)
    assert "jnp.stack" in message and "splits the leading axis" in message


def test_a_removed_keyword_is_reported_at_the_argument_and_renamed_by_the_fix():
    source = """
        import functools
        import jax
        import jax.numpy as jnp

        @functools.partial(jax.jit, backend="cpu")
        def bounded(x, lo, hi):
            y = jnp.clip(x, a_min=lo, a_max=hi)
            return jnp.reshape(y, newshape=(-1,)), jax.device_put(y, device=None)
    """
    found = scan_text(source, RULE)
    assert [(f.line, f.severity) for f in found] == [(5, "info"), (7, "warning"), (7, "warning"), (8, "warning")]
    assert "`min=`" in found[1].message and "TypeError" in found[1].message
    assert "deprecated" in found[0].message and "jax.device_put" in found[0].message
    assert "jax.default_device" in found[0].message  # for a function of no arguments
    # the renames are safe fixes; `device=` of device_put is current and not reported
    fixed = fix_source(textwrap.dedent(source), "example.py", [r() for r in RULE], scan=scan_source).fixed
    assert "jnp.clip(x, min=lo, max=hi)" in fixed and "jnp.reshape(y, shape=(-1,))" in fixed
    assert 'backend="cpu"' in fixed  # dropping it is for the user to decide
    # a wrapper forwarding its own `device` parameter, or None, gives JAX nothing to warn about
    assert scan_text("""
        import jax

        def compile_fn(fn, device=None, backend=None):
            return jax.jit(fn, device=device, backend=None)
    """, RULE) == []


@pytest.mark.slow
def test_the_keyword_facts_hold_in_the_installed_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.arange(4.0)
    calls = {
        "jax.numpy.clip": lambda **kw: jnp.clip(x, **kw),
        "jax.numpy.reshape": lambda **kw: jnp.reshape(x, **kw),
        "jax.scipy.linalg.solve": lambda **kw: jax.scipy.linalg.solve(jnp.eye(2), x[:2], **kw),
        "jax.jit": lambda **kw: jax.jit(lambda v: v, **kw)(x),
    }
    values = {"a_min": 0.0, "a_max": 1.0, "min": 0.0, "max": 1.0, "newshape": (2, 2), "shape": (2, 2),
              "sym_pos": True, "device": jax.devices()[0], "backend": "cpu"}
    for keyword in KEYWORDS:
        call = calls[keyword.function]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if keyword.status == "removed":
                with pytest.raises(TypeError):
                    call(**{keyword.keyword: values[keyword.keyword]})
            else:
                call(**{keyword.keyword: values[keyword.keyword]})
                assert any(issubclass(w.category, DeprecationWarning) for w in caught), keyword
        if keyword.replacement.isidentifier():
            call(**{keyword.replacement: values[keyword.replacement]})


def test_xla_client_internals_are_said_to_have_no_replacement():
    # `jax.lib.xla_client._xla.is_optimized_build()` has nothing in jax.extend to move to
    found = scan_text("""
        import jax
        print(jax.lib.xla_client._xla.is_optimized_build())
    """, rules_with_code("JAX601"))
    assert len(found) == 1 and "no public replacement: drop those calls" in found[0].message


def test_the_config_module_import_is_removed_but_the_config_object_is_current():
    # `from jax.config import config` fails (the module is gone;
    # `jax.config` is the configuration object, and using it is current).
    found = _findings("""
        import jax
        from jax.config import config
        config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_x64", True)
        from jax import config as cfg
        cfg.update("jax_debug_nans", True)
    """)
    assert [line for line, _, _ in found] == [2]
    assert "`jax.config.config` was removed" in found[0][2]


def test_the_removed_shuffle_migrates_to_an_independent_permutation():
    # An SGLD script "shuffling" its data every epoch with `random.shuffle`, gone from
    # JAX; `permutation` shuffles slices together unless told `independent=True`
    [(_, _, message)] = _findings("""
        from jax import random

        def epochs(data, n):
            for i in range(n):
                data = random.shuffle(random.PRNGKey(i), data, axis=0)
            return data
    """)
    assert "jax.random.permutation" in message and "independent=True" in message
    assert "not a rename" in message
    source = "import jax\nx = jax.random.shuffle(jax.random.key(0), jax.numpy.arange(4))\n"
    fixed = fix_source(source, "example.py", [r() for r in RULE], scan=scan_source).fixed
    assert fixed == source  # a migration, not rewritten


def test_the_removed_xla_extension_module_and_a_member_with_its_own_replacement():
    # A course notebook checks `isinstance(func, jaxlib.xla_extension.PjitFunction)`;
    # the module is gone from jaxlib. A member listed on its own keeps its own advice.
    found = _findings("""
        import jaxlib.xla_extension
        from jaxlib.xla_extension import DeviceArray, PjitFunction
        from jaxlib.xla_extension import DeviceArray as Array
    """)
    assert [line for line, _, _ in found] == [1, 2, 3]
    assert "no public replacement" in found[0][2] and "no public replacement" in found[1][2]
    assert "use `jax.Array` instead" in found[2][2]


def test_a_removed_name_imported_only_for_type_checking_is_info():
    # `if TYPE_CHECKING: from jaxlib.xla_extension import Device`: the import never runs.
    found = scan_text("""
        from typing import TYPE_CHECKING
        import jax

        if TYPE_CHECKING:
            from jaxlib.xla_extension import Device
        else:
            from jaxlib.xla_extension import Client
    """, RULE)
    assert [(f.line, f.severity) for f in found] == [(5, "info"), (7, "warning")]
    assert "TYPE_CHECKING" in found[0].message and "fails no run" in found[0].message


def test_the_removed_colab_tpu_setup_says_to_drop_it_and_is_not_rewritten():
    # Twelve repositories of the evaluation corpus open their notebooks with this setup; the
    # module is gone and the TPU VM runtimes need none.
    source = textwrap.dedent("""
        import jax
        import jax.tools.colab_tpu
        jax.tools.colab_tpu.setup_tpu()
        x = jax.lax.tie_in(1, 2)
    """)
    found = _findings(source)
    assert [line for line, _, _ in found] == [2, 3, 4]
    assert "nothing replaces it: drop the import and the `setup_tpu()` call" in found[0][2]
    assert "use nothing" not in found[0][2] and "use nothing" not in found[2][2]
    assert fix_source(source, "example.py", [r() for r in RULE], scan=scan_source).fixed == source


def test_sharding_and_jaxpr_internals_that_moved_or_went():
    # Recall on the corpus: names that fail on current JAX and were missing from the data.
    found = _findings("""
        import jax
        from jax.sharding import PositionalSharding
        from jax.experimental.pjit import with_sharding_constraint
        from jax.experimental.compilation_cache import compilation_cache as cc

        cc.initialize_cache("/tmp/cache")
        sharding = PositionalSharding(jax.devices()).reshape(4, 1)
        invars = [v for v in jaxpr.invars if isinstance(v, jax.core.Var)]
    """)
    messages = {line: message for line, _, message in found}
    assert sorted(messages) == [2, 3, 6, 8]
    assert "not a rename" in messages[2] and "`jax.sharding.Mesh`" in messages[2]
    assert "use `jax.lax.with_sharding_constraint` instead" in messages[3]
    assert "set_cache_dir" in messages[6] and "jax_compilation_cache_dir" in messages[6]
    assert "use `jax.extend.core.Var` instead" in messages[8]
    # The mesh of the removed `maps` module lives on in `jax.sharding`
    [(_, _, mesh)] = _findings("from jax.experimental.maps import Mesh\n")
    assert "use `jax.sharding.Mesh` instead" in mesh and "shard_map" not in mesh


def test_renames_among_the_additions_are_fixed_only_where_the_new_module_is_loaded():
    # `jax.nn.standardize` is a drop-in rename that `import jax` loads; `jax.extend.core` is not
    # loaded by `import jax`, so rewriting `jax.core.Var` to it would break the file.
    source = "import jax\ny = jax.nn.normalize(jax.numpy.ones(3))\nok = isinstance(v, jax.core.Var)\n"
    fixed = fix_source(source, "example.py", [r() for r in RULE], scan=scan_source).fixed
    assert "jax.nn.standardize(" in fixed and "jax.core.Var" in fixed


def test_a_fallback_that_is_itself_removed_fails_on_current_jax():
    # `try: from jax.interpreters.sharded_jit import PartitionSpec` with
    # `except ImportError: from jax.interpreters.pxla import PartitionSpec`. Both spellings are
    # gone, so the handler's import raises today; a fallback to a current spelling stays quiet.
    found = _findings("""
        try:
            from jax.interpreters.sharded_jit import PartitionSpec
        except ImportError:
            from jax.interpreters.pxla import PartitionSpec

        try:
            from jax.sharding import PartitionSpec as P
        except ImportError:
            from jax.interpreters.pxla import PartitionSpec as P

        try:
            from jax.interpreters.pxla import PartitionSpec as Q
        except ImportError:
            from jax.sharding import PartitionSpec as Q
    """)
    assert [line for line, _, _ in found] == [4]
    assert "use `jax.sharding.PartitionSpec` instead" in found[0][2]


def test_a_removed_name_the_file_puts_back_is_no_use():
    # A package assigns `random.KeyArray = jax.Array` so the old library it patches keeps
    # importing; the assignment and the uses it enables are not uses of the removed API.
    found = _findings("""
        import jax
        from jax import random

        random.KeyArray = jax.Array

        def draw(key: random.KeyArray):
            return random.normal(key)

        legacy = jax.random.PRNGKeyArray
    """)
    assert [line for line, _, _ in found] == [9]
