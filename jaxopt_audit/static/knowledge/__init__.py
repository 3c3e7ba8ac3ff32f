"""What the analyzer knows about JAX itself: the API name lists (`apis.py`) and the table of
deprecated and removed spellings (`deprecations.py`)."""
