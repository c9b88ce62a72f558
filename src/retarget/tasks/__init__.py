"""Tasks (constraints): the library's single vocabulary for "what a pose should satisfy".

DESIGN.md, idea 2. The contract (:class:`Task`: residual, Jacobian in the one
tangent space, ``Jᵀc``, weight) and the ways methods use many tasks at once
(:func:`stack`, :func:`penalty`, :func:`penalty_gradient`,
:func:`penalty_and_gradient`) are in :mod:`retarget.tasks.base`; each family
of tasks has its module. Lee & Shin (1999) penalise tasks, Choi & Ko (2000)
stack their Jacobians, Shin et al. (2001) weight them by importance, Tak & Ko
(2005) feed their residuals to a UKF (with the dynamic tasks of
:mod:`retarget.physics.tasks`).

Residual conventions (world frame: Y up, lengths in the skeleton's unit):

=================  ===============================================  =====  ===============
task               residual                                         rows   module
=================  ===============================================  =====  ===============
PositionTask       ``p_point − goal``                               3      ``position``
OrientationTask    ``log(W_point ⊗ goal⁻¹)`` (world-frame rotvec)   3      ``orientation``
JointLimitTask     ``θ − lo ≥ 0``, ``hi − θ ≥ 0`` per finite limit  varies ``limits``
GroundTask         ``y − h(x, z) − clearance ≥ 0`` per point        K      ``ground``
CollisionTask      ``|c_a − c_b| − r_a − r_b − margin ≥ 0``         P      ``collision``
SegmentTask        ``(p_end − p_start) − goal``                     3      ``segment``
HalfSpaceTask      ``n·Σ w_i (p_i + W_i o_i) − level ≥ 0``          K      ``halfspace``
=================  ===============================================  =====  ===============

A root-position task is ``PositionTask(0, goal)``.

A motion's constraints frame by frame (Lee & Shin 1999, §4.2) are a
:class:`Constraints` (with its :class:`Ground`), in
:mod:`retarget.tasks.constraints`; the IK solvers that meet them follow the
protocol :class:`IKSolver` (:mod:`retarget.tasks.solver`).
"""

from .base import Residual, Task, penalty, penalty_and_gradient, penalty_gradient, stack
from .collision import Capsules, CollisionTask, fit_capsules
from .constraints import Constraints, Ground
from .ground import GroundTask
from .halfspace import HalfSpaceTask
from .limits import JointLimitTask
from .orientation import OrientationTask
from .position import PositionTask
from .segment import SegmentTask
from .solver import IKFrames, IKSolver

__all__ = [
    "Capsules",
    "CollisionTask",
    "Constraints",
    "Ground",
    "GroundTask",
    "HalfSpaceTask",
    "IKFrames",
    "IKSolver",
    "JointLimitTask",
    "OrientationTask",
    "PositionTask",
    "Residual",
    "SegmentTask",
    "Task",
    "fit_capsules",
    "penalty",
    "penalty_and_gradient",
    "penalty_gradient",
    "stack",
]
