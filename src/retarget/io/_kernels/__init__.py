"""The readers' compiled number scanner (numba)."""
