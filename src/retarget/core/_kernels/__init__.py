"""The core's compiled functions (numba): quaternions and 3-vectors as tuples, SO(3)
Jacobians, small Cholesky solves, forward kinematics, channel frames.

Private to the library's compiled code: each package's own ``_kernels`` call these
(a numba function can only call numba functions); the public modules load them on
first use (:func:`retarget.core.lazy.loader`).
"""
