"""Dynamic tasks: the physical constraints of Tak & Ko (2005, §4) in the task contract.

A dynamic task is a :class:`~retarget.tasks.Residual` of a :class:`DynamicState`
(a batch of poses with their rates, ``(q, q̇, q̈)``) rather than of a pose:

=============  ==============================================================  =====
task           residual                                                        rows
=============  ==============================================================  =====
ZMPTask        the ZMP ``(x, z)`` (eq. 6) / ``scale``                          2
TorqueTask     ``|τ_j| / limit_j`` per limited joint (eqs. 9–10, RNEA)         L
MomentumTask   environment wrench ``(Ṗ − m g, L̇_c)`` / ``(m g, m g scale)``   6
               (eq. 11, read as ``Ṗ = m g``, ``L̇_c = 0``)
=============  ==============================================================  =====

Their goals (the support polygon's point, the limit, zero in flight) are the
filter's measurements (:mod:`retarget.physics.filter`, :mod:`retarget.physics.curve`);
the filter differentiates the residuals through its sigma points or by finite
differences, so the tasks have no Jacobian. Units: metres, seconds, newtons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..core.arrays import Array
from ..tasks import Residual
from .body import Body
from .dynamics import BodyMotion, body_motion, environment_wrench, inverse_dynamics, zmp_of

__all__ = ["DynamicState", "DynamicTask", "MomentumTask", "TorqueTask", "ZMPTask"]

GRAVITY = 9.81
"""m/s², the gravity of the weight ``m g`` the dynamic rows are divided by."""


@dataclass(frozen=True, eq=False)
class DynamicState:
    """A batch of states ``(q, q̇, q̈)`` of a body; leading axes (...) broadcast.

    Attributes
    ----------
    body : Body
    root_position : ndarray, shape (..., 3)
        In the skeleton's unit.
    rotations : ndarray, shape (..., J, 4)
        Local joint rotations; their leading axes are the batch's.
    velocity, acceleration : ndarray, shape (..., 3)
        The root's world velocity (m/s) and acceleration (m/s²).
    angular_velocity, angular_acceleration : ndarray, shape (..., J, 3)
        Joint rates in the library's tangent space (rad/s, rad/s²;
        :func:`~retarget.physics.dynamics.body_motion`).
    shares : ndarray, shape (..., J), optional
        How the ground's wrench splits between the bodies
        (:func:`~retarget.physics.dynamics.support_shares`); for :class:`TorqueTask`.
    """

    body: Body
    root_position: Array
    rotations: Array
    velocity: Array
    angular_velocity: Array
    acceleration: Array
    angular_acceleration: Array
    shares: Array | None = None

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.rotations.shape[:-2])

    @cached_property
    def motion(self) -> BodyMotion:
        """The bodies' world kinematics (the forward pass of RNEA), computed once."""
        return body_motion(
            self.body,
            self.root_position,
            self.rotations,
            self.velocity,
            self.angular_velocity,
            self.acceleration,
            self.angular_acceleration,
        )


@dataclass(frozen=True, eq=False, kw_only=True)
class DynamicTask(Residual[DynamicState]):
    """A constraint on dynamic states (:class:`DynamicState`): rows and their residual."""


@dataclass(frozen=True, eq=False, kw_only=True)
class ZMPTask(DynamicTask):
    """Balance (eq. 6): the zero-moment point ``(x, z)`` of the state, divided by ``scale``.

    NaN where the vertical force is not positive (:func:`~retarget.physics.dynamics.zmp_of`).

    Parameters
    ----------
    scale : float
        Metres (the character's height: rows in heights).
    """

    scale: float = 1.0

    @property
    def size(self) -> int:
        return 2

    def residual(self, state: DynamicState) -> Array:
        bm = state.motion
        return zmp_of(state.body.mass, bm.centres, bm.accelerations)[0] / self.scale


@dataclass(frozen=True, eq=False, kw_only=True)
class TorqueTask(DynamicTask):
    """Torque limits (eqs. 9–10): ``|τ_j| / limit_j`` for each limited joint.

    The torques by the recursive Newton–Euler algorithm
    (:func:`~retarget.physics.dynamics.inverse_dynamics`), the ground's wrench
    split by the state's ``shares``; a ball joint's three components as one.

    Parameters
    ----------
    limits : mapping of joint index to float
        N m.
    """

    limits: Mapping[int, float] = field(default_factory=dict)

    @property
    def joints(self) -> list[int]:
        return list(self.limits)

    @property
    def size(self) -> int:
        return len(self.limits)

    def residual(self, state: DynamicState) -> Array:
        b = state.body
        n_j = b.skeleton.num_joints
        batch = state.batch_shape
        flat = int(np.prod(batch))
        joints = self.joints
        shares = None
        if state.shares is not None:
            shares = np.broadcast_to(state.shares, (*batch, n_j)).reshape(flat, n_j)

        def flatten(a: Array, tail: tuple[int, ...]) -> Array:
            return np.broadcast_to(a, (*batch, *tail)).reshape(flat, *tail)

        _, _, tau = inverse_dynamics(
            b,
            flatten(state.root_position, (3,)) * b.metres,
            state.rotations.reshape(flat, n_j, 4),
            flatten(state.velocity, (3,)),
            flatten(state.angular_velocity, (n_j, 3)),
            flatten(state.acceleration, (3,)),
            flatten(state.angular_acceleration, (n_j, 3)),
            shares=shares,
        )
        norms = np.linalg.norm(tau[:, joints], axis=-1).reshape(*batch, len(joints))
        return norms / np.array([self.limits[j] for j in joints])


@dataclass(frozen=True, eq=False, kw_only=True)
class MomentumTask(DynamicTask):
    """Momentum (eq. 11, read as ``Ṗ = m g``, ``L̇_c = 0``): the environment's wrench
    on the body, force / ``m g`` and moment / ``(m g scale)``.

    Parameters
    ----------
    scale : float
        Metres (the character's height).
    """

    scale: float = 1.0

    @property
    def size(self) -> int:
        return 6

    def residual(self, state: DynamicState) -> Array:
        weight = state.body.total_mass * GRAVITY
        force, moment, _ = environment_wrench(state.body, state.motion)
        return np.concatenate([force / weight, moment / (weight * self.scale)], axis=-1)
