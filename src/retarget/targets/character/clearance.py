"""A character's hands kept off its posed body surface by the least departure (issue 41, items 3-4).

The capsules of :mod:`retarget.targets.character.skin` are a body's rough shape: a
knight's chest armour sticks out of them, a mannequin's slim waist lies inside them.
This pass keeps the hands off the surface itself (:mod:`retarget.targets.character.surface`:
the triangles of the torso, the pelvis and the thighs, rigid parts hung from those
bones included), departing from the method's arms by the least amount that does it:

.. math::
    \\min_x\\ \\tfrac12 x^T M x + \\sum_{j ∈ arms} |\\log(W_j(x) W_j^{-1})|^2
    \\quad\\text{s.t.}\\quad n_k · p_k(x) ≥ n_k · q_k + c ,

the unknowns ``x`` the arms' joints alone (the clavicle down; the body, the root and so
the feet as they were), the soft rows every arm joint's world orientation as the
method left it, and a hard-ish row (:class:`retarget.tasks.HalfSpaceTask`, weight
``1e5 / height²``, as a robot's links are kept apart) per hand vertex near the
surface: the vertex ``p_k`` (linear blend skinning, the hand's and the forearm's
joints) on the outer side of the surface's tangent plane at its nearest point ``q_k``
by the clearance ``c``, the plane's normal ``n_k`` the surface's smooth one there (the
vertex normals interpolated, as Phong shades: a low-poly armour's faces would turn the
plane, and the arm, by their dihedral angle from one frame to the next).

The planes linearise "outside the surface" about a pose, so the problem is solved in
rounds (:data:`ROUNDS`, sequential linearisation): the planes are taken at the capsule
pass's result first (near the answer; a hand deep inside the chest would find the
wrong side of it), then at each round's result. Each round solves frame by frame
(:func:`retarget.ik.newton.solve_ik_newton`, as the capsule pass), started from the
last round's result (the first from the capsule pass's: a frame does not jump to
another minimum between rounds), with a proximal row per arm joint toward it
(:data:`PROXIMAL`: zero where the rounds agree, it stops a round from overshooting
where the last one's planes no longer hold).

The rows of a frame: of each hand's vertices (every ``stride``-th, :data:`POINTS` at
most), those nearer the surface than :data:`BAND` × the height (or given a row in an
earlier round: a vertex released would go back in), the :data:`ROWS` nearest. An
inequality row pushes only where it binds, so a hand's correction grows from zero as
it comes near the body: no pop where a frame gains rows.

On the KayKit knight (the whole LAFAN walk, 1,800 frames): hand vertices deeper than
1 % of the height in the surface on 0 of the frames (54 % after the capsules alone),
arm departure 22.9° on average against 22.5° after six rounds without the proximal
rows (the least the linearisation reaches).

The departure it reports per frame (:func:`arm_departure`) is the largest angle
between an upper arm's or forearm's direction in the result and in the method's
motion: the least the body's shape forces (issue 41, item 4).

Units: the skeleton's (metres for glTF); angles in degrees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...core.arrays import Array
from ...core.kinematics import forward_kinematics, rest_pose
from ...core.motion import Motion
from ...humanoid.roles import find_roles, hand_joints, height
from ...io.gltf import SkinMesh
from .skin import arm_joints
from .surface import _body_joints, posed_vertices, signed_distances_posed

__all__ = ["BAND", "CLEARANCE", "ROUNDS", "ROWS", "Clearance", "arm_departure", "clear_hands"]

#: The gap kept between a hand vertex and the body surface, and the distance within
#: which a vertex gets a row (shares of the height).
CLEARANCE, BAND = 0.003, 0.03
#: Linearisations of the surface, and rows per hand per frame.
ROUNDS, ROWS = 3, 16
#: The hand vertices tested per hand at most (every ``stride``-th).
POINTS = 240
#: The weight (1/rad²) of the rows that hold each arm joint near the last round's
#: result (a proximal term: zero at the fixed point, where the rounds agree).
PROXIMAL = 1.0
_APART = 1e5


@dataclass(frozen=True)
class Clearance:
    """What :func:`clear_hands` did.

    Attributes
    ----------
    motion : Motion
        The motion with its hands off the surface.
    departure : (F,)
        Per frame, degrees: :func:`arm_departure` of ``motion`` from the method's.
    frames : int
        Frames that had rows in the last round.
    rounds : int
    """

    motion: Motion
    departure: Array
    frames: int
    rounds: int


def arm_departure(motion: Motion, reference: Motion) -> Array:
    """Per frame (F,), degrees: the largest angle between an upper arm's (shoulder to
    elbow) or forearm's (elbow to wrist) direction in ``motion`` and in ``reference``
    (one skeleton)."""
    sk = motion.skeleton
    roles = find_roles(sk)
    bones = [
        (roles[f"{s}_{a}"], roles[f"{s}_{b}"])
        for s in ("left", "right")
        for a, b in (("shoulder", "elbow"), ("elbow", "wrist"))
        if f"{s}_{a}" in roles and f"{s}_{b}" in roles
    ]
    out = np.zeros(motion.num_frames)
    if not bones:
        return out
    here = forward_kinematics(sk, motion.root_position, motion.rotations, motion.translations)[0]
    there = forward_kinematics(
        sk, reference.root_position, reference.rotations, reference.translations
    )[0]
    for a, b in bones:
        u, v = here[:, b] - here[:, a], there[:, b] - there[:, a]
        cos = (u * v).sum(-1) / np.maximum(
            np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1), 1e-300
        )
        out = np.maximum(out, np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
    return out


@dataclass(frozen=True)
class _Parts:
    """The surface split once: the body's triangles (T, 3) and each hand's vertices
    (every ``stride``-th skinned one), the joints that carry them (I,), and each hand
    vertex's offsets (H, I, 3) and weights (H, I) on those joints."""

    body: NDArray[np.intp]
    hands: list[NDArray[np.intp]]
    joints: NDArray[np.intp]
    offsets: Array
    weights: Array


def _parts(motion: Motion, mesh: SkinMesh) -> _Parts | None:
    sk = motion.skeleton
    roles = find_roles(sk)
    main = mesh.joints[np.arange(len(mesh.joints)), mesh.weights.argmax(axis=1)]
    in_body = np.isin(main, _body_joints(motion))
    body = mesh.triangles[in_body[mesh.triangles].all(axis=1)]
    skinned = ~mesh.rigid if mesh.rigid is not None else np.ones(len(main), bool)
    hands = []
    for side in ("left", "right"):
        mine = np.flatnonzero(np.isin(main, hand_joints(sk, side, roles)) & skinned)
        hands.append(mine[:: max(1, -(-len(mine) // POINTS))])
    every = np.concatenate(hands)
    if not len(body) or not len(every):
        return None
    carried = mesh.joints[every]  # (H, 4), -1: none
    weight = np.where(carried >= 0, mesh.weights[every], 0.0)
    joints = np.unique(carried[weight > 0])
    slot = np.searchsorted(joints, np.maximum(carried, 0))
    rest, _ = rest_pose(sk)
    offsets = np.zeros((len(every), len(joints), 3))
    weights = np.zeros((len(every), len(joints)))
    for k in range(carried.shape[1]):
        on = weight[:, k] > 0
        rows = np.flatnonzero(on)
        weights[rows, slot[rows, k]] += weight[rows, k]
        # the baked skeleton's joints have identity rest rotations: a vertex's offset in
        # a joint's frame is its rest position less the joint's
        offsets[rows, slot[rows, k]] = mesh.vertices[every[rows]] - rest[carried[rows, k]]
    weights /= weights.sum(axis=1, keepdims=True)
    return _Parts(body, hands, joints.astype(np.intp), offsets, weights)


def _signed(
    motion: Motion, mesh: SkinMesh, parts: _Parts, frames: NDArray[np.intp], band: float
) -> tuple[Array, Array, Array]:
    """At ``motion``'s ``frames``: each hand vertex's signed distance to the body
    surface (K, H) (inside tested by the winding number within ``band``: a vertex
    behind the smooth normal is not always inside, where armour lies over a body),
    nearest point and smooth outward normal there (K, H, 3)
    (:func:`signed_distances_posed`)."""
    sk = motion.skeleton
    every = np.concatenate(parts.hands)
    used = np.unique(np.r_[parts.body.reshape(-1), every])
    at = np.searchsorted(used, parts.body)
    hand_at = np.searchsorted(used, every)
    sizes = [len(h) for h in parts.hands]
    sub = SkinMesh(mesh.vertices[used], mesh.joints[used], mesh.weights[used], mesh.triangles)
    rest, _ = rest_pose(sk)
    signed = np.full((len(frames), len(every)), np.inf)
    near = np.full((len(frames), len(every), 3), np.nan)
    normal = np.full((len(frames), len(every), 3), np.nan)
    for c0 in range(0, len(frames), 256):
        f = frames[c0 : c0 + 256]
        pos, rot = forward_kinematics(
            sk, motion.root_position[f], motion.rotations[f],
            None if motion.translations is None else motion.translations[f],
        )  # fmt: skip
        posed = posed_vertices(sub, pos, rot, rest)
        out = signed_distances_posed(
            posed, at, hand_at, np.inf, band, sub.vertices, groups=np.repeat([0, 1], sizes)
        )
        signed[c0 : c0 + 256], near[c0 : c0 + 256], normal[c0 : c0 + 256] = out
    return signed, near, normal


def clear_hands(
    motion: Motion,
    mesh: SkinMesh,
    start: Motion | None = None,
    *,
    clearance: float = CLEARANCE,
    band: float = BAND,
    rounds: int = ROUNDS,
    rows: int = ROWS,
) -> Clearance | None:
    """The pass of the module docstring: ``motion`` the method's (on the character's
    baked skeleton), ``mesh`` its surface (:func:`retarget.io.gltf.skin_mesh`), ``start``
    the pose the planes are first taken at (the capsule pass's result; default
    ``motion``); ``clearance`` and ``band`` shares of the height. None: no body
    triangles or hand vertices to keep apart."""
    from ...ik.newton import parameters, solve_ik_newton
    from ...ik.numeric import default_rigidity
    from ...tasks import HalfSpaceTask, OrientationTask

    sk = motion.skeleton
    parts = _parts(motion, mesh)
    arms = arm_joints(sk)
    if parts is None or not arms:
        return None
    tall = height(sk, find_roles(sk))
    gap, reach = clearance * tall, band * tall
    every = np.arange(motion.num_frames)
    side = np.repeat(np.arange(2), [len(h) for h in parts.hands])
    _, world = forward_kinematics(sk, motion.root_position, motion.rotations, motion.translations)
    rigidity = default_rigidity(sk)
    rigidity[0] = np.inf
    rigidity[1 + np.asarray([j for j in range(sk.num_joints) if j not in arms], np.intp)] = np.inf
    here = start if start is not None else motion
    tasks: list = [
        OrientationTask(j, world[:, j], weight=1.0) for j in sorted(arms) if sk.euler_orders[j]
    ]
    done, active = 0, np.zeros(0, np.intp)
    chosen = np.zeros((motion.num_frames, len(side)), bool)  # every vertex given a row
    last = parameters(
        sk, rigidity, motion.root_position, here.rotations, motion.root_position, motion.rotations
    )
    for _ in range(max(int(rounds), 1)):
        done += 1
        signed, near, normal = _signed(here, mesh, parts, every, reach)
        wanted = (signed < reach) | chosen
        active = np.flatnonzero(wanted.any(axis=1))
        if not len(active):
            here = motion
            break
        order = np.where(wanted, signed, np.inf)  # (F, H)
        picks = []
        for s in range(2):
            cols = np.flatnonzero(side == s)
            if len(cols):
                picks.append(cols[np.argsort(order[:, cols], axis=1)[:, : min(rows, len(cols))]])
        pick = np.concatenate(picks, axis=1)  # (F, R) vertex columns
        live = np.isfinite(np.take_along_axis(order, pick, axis=1))
        np.put_along_axis(chosen, pick, live | np.take_along_axis(chosen, pick, axis=1), axis=1)
        frame = every[:, None]
        n = np.where(live[..., None], normal[frame, pick], np.nan)
        level = np.where(live, (n * near[frame, pick]).sum(-1) + gap, np.nan)
        half = HalfSpaceTask(
            parts.joints, parts.offsets[pick], parts.weights[pick], n, level,
            weight=_APART / tall**2,
        )  # fmt: skip
        _, now = forward_kinematics(sk, here.root_position, here.rotations, here.translations)
        prox = [
            OrientationTask(j, now[:, j], weight=PROXIMAL)
            for j in sorted(arms)
            if sk.euler_orders[j]
        ]
        solved = solve_ik_newton(
            sk,
            motion.root_position,
            motion.rotations,
            [*tasks, *prox, half],
            rigidity=rigidity,
            tolerance=1e-4,
            max_iterations=50,
            damping=np.where(np.isfinite(rigidity[1:]), 100.0 * rigidity[1:], 0.0),
            start=last,
            carry=False,
        )
        last = solved.x
        here = motion.replace(rotations=solved.rotations)
    return Clearance(here, arm_departure(here, motion), len(active), done)
