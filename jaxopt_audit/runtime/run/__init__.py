"""`jaxopt-audit run`: the runtime audit of a user's program (instruments, findings, report)."""
