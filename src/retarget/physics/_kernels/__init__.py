"""The dynamics' compiled recursions (numba)."""
