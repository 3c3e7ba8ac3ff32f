"""What a rule is (`rule.py`), what a scan yields (`results.py`) and how a rule builds a fix
(`fix.py`)."""
