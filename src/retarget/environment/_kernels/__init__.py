"""The environment's compiled queries (numba): height fields, and the per-point floor,
box and sphere queries that the shapes and the puppetry kernel both call."""
