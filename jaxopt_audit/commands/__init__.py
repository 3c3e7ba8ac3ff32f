"""The commands: argument handling and output for `scan`, `rules`, `run` (and, through their
domains, `bench` and `report`). They sit above the domains: `static`, `runtime` and `report`
never import from here, so the import graph between the packages has no cycle."""
