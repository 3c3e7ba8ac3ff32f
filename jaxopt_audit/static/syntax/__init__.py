"""Tree helpers with no JAX knowledge: dotted names and the import table, walks over libcst
nodes, source positions."""
