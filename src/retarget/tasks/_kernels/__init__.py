"""Compiled kernels of :mod:`retarget.tasks` (loaded on first use: :mod:`retarget.core.lazy`)."""
