"""A character's compiled surface queries (numba)."""
