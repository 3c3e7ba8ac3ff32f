"""The scan pipeline: find the files (`discovery.py`), read the configuration (`config.py`), load
and select the rules (`registry.py`), scan each file (`engine.py`, `notebooks.py`, `noqa.py`,
`isolation.py`), rank what they find (`impact.py`), connect modules (`project.py`) and keep
results between runs (`cache.py`, `cache_use.py`)."""
