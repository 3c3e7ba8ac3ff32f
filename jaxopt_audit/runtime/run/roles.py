"""What an un-jitted function running eager ops is to the program (`report.eager_roles` decides,
`driven` reads it), and the call counts that decide it."""

STEP, HELPER, DRIVER, SETUP = "step", "helper", "driver", "setup"

REPEATED = 3  # calls of a function (or per call of its caller) that make a per-step pattern
PERIODIC = 10  # a function or line run this many times less often than the step is not per step
