"""A robot's links into each other, frame by frame, by MuJoCo's collision detection of the
model's own geometry.

The exact check behind the self-collision measure
(:func:`retarget.targets.robot.measures.measure_robot`); the IK pass onto a robot
(:func:`retarget.targets.robot.hinges.to_robot`) keeps capsules fitted to the geometry apart, which
only approximate a model's boxes and meshes. Pairs of bodies left out: a body and the
world, a body and its parent (MuJoCo's own rule), and bodies already in contact at
the zero configuration, which a model has by design (a shoulder housing round its
torso's).

Units: metres, the robot's world (z up); angles in radians.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...core.arrays import Array
from .model import Robot

__all__ = ["SelfContacts", "model_qpos", "resting_pairs", "self_contacts"]


@dataclass(frozen=True)
class SelfContacts:
    """Contacts between links (C of them), deepest first within no order.

    Attributes
    ----------
    frame : (C,) int
    geoms, bodies : (C, 2) int
        MuJoCo's geometry and body numbers of the two.
    dist : (C,)
        Signed distance (m): negative, that far into each other.
    position : (C, 3)
        Midway between the two surfaces (m, world).
    normal : (C, 3)
        Unit, from the first geometry to the second.
    """

    frame: NDArray[np.intp]
    geoms: NDArray[np.intp]
    bodies: NDArray[np.intp]
    dist: Array
    position: Array
    normal: Array

    @property
    def num_contacts(self) -> int:
        return len(self.frame)

    def surfaces(self) -> tuple[Array, Array]:
        """The two surface points (C, 3) each: the first geometry's nearest the second
        and the second's nearest the first (``n · (s2 − s1) = dist``)."""
        half = 0.5 * self.dist[:, None] * self.normal
        return self.position - half, self.position + half


def model_qpos(model, robot: Robot, root_pos: Array, root_quat: Array, dof_pos: Array) -> Array:
    """MuJoCo's ``qpos`` per frame (F, nq) for trajectories in the robot's order: the
    base (where the model floats it; else the model's own) and the hinges."""
    dof_pos = np.asarray(dof_pos, dtype=float)
    qpos = np.tile(np.asarray(model.qpos0, dtype=float), (len(dof_pos), 1))
    for d, name in enumerate(robot.joint_names):
        qpos[:, int(model.joint(name).qposadr[0])] = dof_pos[:, d]
    free = [j for j in range(model.njnt) if int(model.jnt_type[j]) == 0]
    if free:
        a = int(model.jnt_qposadr[free[0]])
        qpos[:, a : a + 3] = root_pos
        qpos[:, a + 3 : a + 7] = root_quat
    return qpos


def resting_pairs(model) -> frozenset[tuple[int, int]]:
    """Body pairs (smaller number first) in contact at the model's zero configuration."""
    import mujoco

    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_collision(model, data)
    return frozenset(
        (min(b1, b2), max(b1, b2))
        for c in data.contact[: data.ncon]
        for b1, b2 in [(int(model.geom_bodyid[c.geom1]), int(model.geom_bodyid[c.geom2]))]
    )


def self_contacts(
    model,
    qpos: Array,
    *,
    deeper_than: float = 0.0,
    resting: frozenset[tuple[int, int]] | None = None,
) -> SelfContacts:
    """Every contact between two links more than ``deeper_than`` (m) into each other,
    over the frames of ``qpos`` (F, nq) (:func:`model_qpos`), but the pairs the
    module docstring leaves out (``resting``: :func:`resting_pairs`, computed when
    not given)."""
    import mujoco

    if resting is None:
        resting = resting_pairs(model)
    data = mujoco.MjData(model)
    parent = np.asarray(model.body_parentid)
    body_of = np.asarray(model.geom_bodyid)
    rows: list[tuple] = []
    for k in range(len(qpos)):
        data.qpos[:] = qpos[k]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_collision(model, data)
        for c in data.contact[: data.ncon]:
            if -float(c.dist) <= deeper_than:
                continue
            b1, b2 = int(body_of[c.geom1]), int(body_of[c.geom2])
            if b1 == 0 or b2 == 0 or b1 == b2 or parent[b1] == b2 or parent[b2] == b1:
                continue
            if (min(b1, b2), max(b1, b2)) in resting:
                continue
            rows.append(
                (k, int(c.geom1), int(c.geom2), b1, b2, float(c.dist), *c.pos, *c.frame[:3])
            )
    table = np.array(rows, dtype=float).reshape(-1, 12)
    return SelfContacts(
        frame=table[:, 0].astype(np.intp),
        geoms=table[:, 1:3].astype(np.intp),
        bodies=table[:, 3:5].astype(np.intp),
        dist=table[:, 5].copy(),
        position=table[:, 6:9].copy(),
        normal=table[:, 9:12].copy(),
    )
