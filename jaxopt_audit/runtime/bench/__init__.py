"""`jaxopt-audit bench`: measurement of staged pipelines (harness, workload protocol, machine facts).

Imports nothing heavy: the pipeline protocol is read without JAX."""
