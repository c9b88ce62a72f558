"""The filters' compiled recursions (numba)."""
