"""Reference pipelines: real workloads in measured stages, one module per rewrite."""
