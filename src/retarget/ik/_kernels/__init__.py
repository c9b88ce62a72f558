"""The solvers' compiled code (numba): the analytic limb's rows, Gauss-Newton IK frame by
frame, the radial basis."""
