"""jaxopt-audit: find JAX performance mistakes statically, confirm them at runtime, prove the fix."""

__version__ = "0.1.0"
