"""The robot's compiled Davenport split (numba)."""
