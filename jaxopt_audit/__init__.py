"""jaxopt-audit: find JAX performance mistakes statically, confirm them at runtime, prove the fix."""

import os as _os

__version__ = "0.1.0"

# A built package holds `rules/` and `reference_pipelines/` inside it (pyproject maps them in).
# In a source checkout they sit beside this folder; let `jaxopt_audit.rules` resolve there too, so
# that `python -m pytest` or `python -c` run from the checkout see the same package as the wheel.
_here = _os.path.dirname(_os.path.abspath(__file__))
_checkout = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "rules")) and _os.path.isfile(
        _os.path.join(_checkout, "rules", "__init__.py")):
    __path__.append(_checkout)  # noqa: F821
