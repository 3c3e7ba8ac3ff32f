"""`scan --fix` / `--diff`: apply the rules' fixes to files in rounds (`apply.py`), notebooks
cell by cell (`notebook.py`), and say what changed (`run.py`). The rules build their fixes with
`static/framework/fix.py`; the codemods shared by several rules are in `codemods.py`."""
