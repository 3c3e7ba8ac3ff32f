"""`scan --fix` / `--diff`: apply the rules' fixes to files in rounds (`apply.py`), notebooks
cell by cell (`notebook.py`), and say what changed (`run.py`). Each rule builds its own fix,
beside its check, from the helpers of `static/framework/fix.py`."""
