"""The model and its algebra: what every other package stands on.

Quaternions and rotation vectors (:mod:`.quat`, :mod:`.so3`), the skeleton
(:mod:`.skeleton`), motions and the one tangent space (:mod:`.motion`: ``⊕``,
``⊖``), batched forward kinematics and Jacobians (:mod:`.kinematics`), channels,
DOF masks and limits (:mod:`.dofs`), the optimisers (:mod:`.optimize`), the online
contract (:mod:`.frames`), what a method returns (:mod:`.result`), and the toolbox:
errors, array helpers, strict JSON, modules loaded on first use. Conventions:
DESIGN.md. The compiled scalar functions (numba) live in the private
:mod:`._kernels`, which the kernels of the other packages call.
"""
