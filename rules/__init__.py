"""One module per rule: metadata, documentation, examples and the check."""
