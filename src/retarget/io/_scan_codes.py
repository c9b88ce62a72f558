"""How a scan of numbers stopped: shared by :mod:`._scan` and its compiled kernels."""

TOKEN_END, TOKEN_SLOW, TOKEN_BAD = 0, 2, 3
