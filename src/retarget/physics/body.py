"""Mass model of a skeleton: one rigid body per joint, in SI units (Tak & Ko 2005, §4).

The masses, centres of mass and radii of gyration are de Leva's (1996)
adjustments of Zatsiorsky–Seluyanov's data for **adult males** (de Leva, "Adjustments
to Zatsiorsky-Seluyanov's segment inertia parameters", J. Biomech. 29(9),
Table 4), each segment taken between de Leva's joint-centre endpoints and
scaled to the skeleton's own bone lengths and a total body mass:

=========  ===============  ======  ===========  =====================
segment    endpoints        mass %  CM % from 1st  r sag / trans / long %
=========  ===============  ======  ===========  =====================
head       vertex → neck      6.94      50.02      30.3 / 31.5 / 26.1
upper trunk neck → xiphion    15.96      50.66      50.5 / 32.0 / 46.5
mid trunk  xiphion → navel    16.33      45.02      48.2 / 38.3 / 46.8
lower trunk navel → mid-hip   11.17      61.15      61.5 / 55.1 / 58.7
upper arm  shoulder → elbow    2.71      57.72      28.5 / 26.9 / 15.8
forearm    elbow → wrist       1.62      45.74      27.6 / 26.5 / 12.1
hand       wrist → MET3        0.61      79.00      62.8 / 51.3 / 40.1
thigh      hip → knee         14.16      40.95      32.9 / 32.9 / 14.9
shank      knee → ankle        4.33      43.95      25.1 / 24.6 / 10.2
foot       heel → toe tip      1.37      44.15      25.7 / 24.5 / 12.4
=========  ===============  ======  ===========  =====================

On a skeleton (:mod:`retarget.humanoid.roles`): limb segments lie on the bones
between the limb roles (the hand and foot from the wrist and ankle to their
tips, or a length estimated from the forearm or shank when the file has no
tip); the trunk's three pieces lie along the path from the hips' midpoint
(de Leva's mid-hip) to the neck joint, split in de Leva's mean proportions
(145.7, 215.5 and 242.1 mm of a 603.3 mm trunk); the head from the neck to
the head's tip (or as far again above the head joint as it is above the
neck). Each segment's mass sits at its centre of mass and belongs to the
joint whose bone holds that point at rest; a joint with several gets their
combined mass, centre and inertia (parallel axes). The inertia of a segment
is taken symmetric about its long axis (the mean of the sagittal and
transverse radii across it): the skeleton does not say which way a segment
faces. The foot is one body on the ankle joint (toe joints carry no mass).

Loads (``{joint: kg}``, the paper's 8 kg club head) are point masses at the
centre of mass of the segment of that joint, added to the body mass.

Why our own: pinocchio is a test reference (``tests/test_physics.py``
compares inverse dynamics), not a dependency; this module only builds the
per-joint inertial parameters that :mod:`retarget.physics.dynamics` uses.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core import quat
from ..core.arrays import Array
from ..core.errors import RetargetError
from ..core.kinematics import rest_pose
from ..core.skeleton import Skeleton
from ..humanoid.roles import Roles, find_roles
from ..humanoid.world import metres_per_unit

__all__ = ["DE_LEVA_MALE", "Body", "body_model"]


#: de Leva (1996) Table 4, males: mass %, CM % of the length from the first
#: endpoint, radii of gyration % (sagittal, transverse, longitudinal).
DE_LEVA_MALE: Mapping[str, tuple[float, float, float, float, float]] = {
    "head": (6.94, 50.02, 30.3, 31.5, 26.1),
    "upper_trunk": (15.96, 50.66, 50.5, 32.0, 46.5),
    "mid_trunk": (16.33, 45.02, 48.2, 38.3, 46.8),
    "lower_trunk": (11.17, 61.15, 61.5, 55.1, 58.7),
    "upper_arm": (2.71, 57.72, 28.5, 26.9, 15.8),
    "forearm": (1.62, 45.74, 27.6, 26.5, 12.1),
    "hand": (0.61, 79.00, 62.8, 51.3, 40.1),
    "thigh": (14.16, 40.95, 32.9, 32.9, 14.9),
    "shank": (4.33, 43.95, 25.1, 24.6, 10.2),
    "foot": (1.37, 44.15, 25.7, 24.5, 12.4),
}
#: Lower, middle and upper trunk lengths over the whole (de Leva 1996, Table 1, males).
_TRUNK_SHARES = np.array([145.7, 215.5, 242.1]) / 603.3


@dataclass(frozen=True, eq=False)
class Body:
    """Inertial parameters, one rigid body per joint, SI units.

    Attributes
    ----------
    skeleton : Skeleton
    mass : ndarray, shape (J,)
        kg (0 for a joint that carries no segment).
    com : ndarray, shape (J, 3)
        Centre of mass in the joint's own frame, metres.
    inertia : ndarray, shape (J, 3, 3)
        Inertia tensor about the centre of mass, in the joint's frame, kg m².
    metres : float
        Metres per unit of the skeleton's lengths.
    segments : dict of str to int
        The joint each de Leva segment was given to (``left_thigh`` …).
    """

    skeleton: Skeleton
    mass: Array
    com: Array
    inertia: Array
    metres: float
    segments: dict[str, int]

    @property
    def total_mass(self) -> float:
        """kg."""
        return float(self.mass.sum())

    @functools.cached_property
    def metric_skeleton(self) -> Skeleton:
        """The skeleton in metres (``skeleton.scaled(metres)``), made once."""
        return self.skeleton.scaled(self.metres)


def _along(points: Array, joints: list[int], share: float) -> tuple[Array, int]:
    """The point at ``share`` of the bone-path length along ``points`` (K, 3), and the
    joint that holds it (``joints[k]`` for the piece from point k to k+1)."""
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    total = seg.sum()
    if total <= 0.0:
        return points[0].copy(), joints[0]
    at = share * total
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    k = int(np.clip(np.searchsorted(cum, at, side="right") - 1, 0, len(seg) - 1))
    lam = (at - cum[k]) / max(seg[k], 1e-300)
    return points[k] + lam * (points[k + 1] - points[k]), joints[k]


def _path(skeleton: Skeleton, top: int, bottom: int) -> list[int]:
    out = [bottom]
    while out[-1] != top:
        parent = int(skeleton.point_parents[out[-1]])
        if parent < 0:
            raise RetargetError(
                f"{skeleton.point_names[bottom]} is not below {skeleton.point_names[top]}"
            )
        out.append(parent)
    return out[::-1]


def _segment_inertia(mass: float, length: float, radii: Sequence[float], axis: Array) -> Array:
    """Inertia (3, 3) about the CM from radii of gyration in % of the length (sagittal,
    transverse, longitudinal): symmetric about the long ``axis``."""
    r_sag, r_trans, r_long = (float(r) / 100.0 * length for r in radii)
    across = mass * 0.5 * (r_sag**2 + r_trans**2)
    along = mass * r_long**2
    a = axis / np.maximum(np.linalg.norm(axis), 1e-300)
    return np.asarray(across * np.eye(3) + (along - across) * np.outer(a, a), dtype=np.float64)


def body_model(
    skeleton: Skeleton,
    total_mass: float = 70.0,
    *,
    loads: Mapping[str, float] | None = None,
    roles: Roles | None = None,
) -> Body:
    """The de Leva mass model of a humanoid skeleton (module docstring).

    Parameters
    ----------
    skeleton : Skeleton
    total_mass : float
        kg, loads excluded.
    loads : mapping of joint name to kg, optional
        Point masses at the centre of mass of that joint's segment.
    roles : Roles, optional
        Default :func:`retarget.humanoid.roles.find_roles`.
    """
    if not total_mass > 0:
        raise RetargetError(f"expected a total mass > 0 kg, got {total_mass}")
    roles = roles if roles is not None else find_roles(skeleton)
    metres = metres_per_unit(skeleton.unit)  # SI from the file's unit
    pos_w, rot_w = rest_pose(skeleton)
    pos = pos_w * metres
    n = skeleton.num_joints
    pieces: list[tuple[str, int, float, Array, Array]] = []  # name, joint, kg, CM, inertia

    def limb(name: str, key: str, top: int, end: Array, carrier: int) -> None:
        pct, cm, *radii = DE_LEVA_MALE[key]
        start = pos[top]
        length = float(np.linalg.norm(end - start))
        m = total_mass * pct / 100.0
        centre = start + cm / 100.0 * (end - start)
        inertia = _segment_inertia(m, length, radii, end - start)
        pieces.append((name, carrier, m, centre, inertia))

    for side in ("left", "right"):
        need = ("hip", "knee", "ankle", "shoulder", "elbow", "wrist")
        missing = [k for k in need if f"{side}_{k}" not in roles.points]
        if missing:
            raise RetargetError(f"the mass model needs the {side} {', '.join(missing)}")
        r = {k: int(roles.points[f"{side}_{k}"]) for k in need}
        toe_tip = roles.points.get(f"{side}_toe_tip")
        hand_tip = roles.points.get(f"{side}_hand_tip")
        limb(f"{side}_thigh", "thigh", r["hip"], pos[r["knee"]], r["hip"])
        limb(f"{side}_shank", "shank", r["knee"], pos[r["ankle"]], r["knee"])
        toe_joint = roles.points.get(f"{side}_toe")
        if toe_tip is not None:
            toe = pos[toe_tip]
        elif toe_joint is not None:  # the toes' own length taken as a quarter of the foot's
            toe = pos[toe_joint] + 0.25 * (pos[toe_joint] - pos[r["ankle"]])
        else:  # no foot in the file: along the shank (1.4 % of the mass; its CM barely moves)
            toe = pos[r["ankle"]] + 0.6 * (pos[r["ankle"]] - pos[r["knee"]])
        limb(f"{side}_foot", "foot", r["ankle"], toe, r["ankle"])
        limb(f"{side}_upper_arm", "upper_arm", r["shoulder"], pos[r["elbow"]], r["shoulder"])
        limb(f"{side}_forearm", "forearm", r["elbow"], pos[r["wrist"]], r["elbow"])
        tip = pos[hand_tip] if hand_tip is not None else None
        if tip is None or np.linalg.norm(tip - pos[r["wrist"]]) <= 0:
            fore = pos[r["wrist"]] - pos[r["elbow"]]
            tip = pos[r["wrist"]] + 0.45 * fore  # de Leva: hand (to MET3) ≈ 0.45 × forearm
        limb(f"{side}_hand", "hand", r["wrist"], tip, r["wrist"])

    # trunk: mid-hip → hips → spine → neck; head: neck → head → its tip (no neck: the
    # head hangs from the chest, the top of the trunk)
    hips, head = roles["hips"], roles["head"]
    neck = roles.points.get("neck", int(skeleton.point_parents[head]))
    mid_hip = 0.5 * (pos[roles["left_hip"]] + pos[roles["right_hip"]])
    chain = _path(skeleton, hips, neck)
    trunk_pts = np.vstack([mid_hip, pos[chain]])
    trunk_joints = [hips, *chain[:-1]]
    bounds = np.concatenate([[0.0], np.cumsum(_TRUNK_SHARES)])
    length = float(np.linalg.norm(np.diff(trunk_pts, axis=0), axis=1).sum())
    axis = pos[neck] - mid_hip
    for k, key in enumerate(("lower_trunk", "mid_trunk", "upper_trunk")):
        pct, cm, *radii = DE_LEVA_MALE[key]
        lo, hi = bounds[k], bounds[k + 1]
        # de Leva measures each piece's CM from its upper end (navel, xiphion, neck)
        share = hi - cm / 100.0 * (hi - lo)
        centre, carrier = _along(trunk_pts, trunk_joints, share)
        m = total_mass * pct / 100.0
        inertia = _segment_inertia(m, (hi - lo) * length, radii, axis)
        pieces.append((key, carrier, m, centre, inertia))
    head_path = _path(skeleton, neck, head)
    top_point = roles.points.get("head_top")
    vertex = pos[top_point] if top_point is not None else pos[head] + (pos[head] - pos[neck])
    head_pts = np.vstack([pos[head_path], vertex])
    pct, cm, *radii = DE_LEVA_MALE["head"]
    m = total_mass * pct / 100.0
    centre, carrier = _along(head_pts, head_path, 1.0 - cm / 100.0)  # CM % from the vertex
    head_len = float(np.linalg.norm(np.diff(head_pts, axis=0), axis=1).sum())
    pieces.append(
        (
            "head",
            carrier,
            m,
            centre,
            _segment_inertia(m, head_len, radii, vertex - pos[neck]),
        )
    )

    for joint, kg in (loads or {}).items():
        if joint not in skeleton.names:
            raise RetargetError(f"load on {joint!r}: no such joint")
        if not kg >= 0:
            raise RetargetError(f"load on {joint!r}: expected kg >= 0, got {kg}")
        j = skeleton.index(joint)
        own = [p for p in pieces if p[1] == j]
        at = own[0][3] if own else pos[j]
        pieces.append((f"load:{joint}", j, float(kg), at.copy(), np.zeros((3, 3))))

    mass = np.zeros(n)
    first = np.zeros((n, 3))
    for _, j, m, c, _ in pieces:
        mass[j] += m
        first[j] += m * c
    centre_w = np.where(mass[:, None] > 0, first / np.maximum(mass, 1e-300)[:, None], pos[:n])
    inertia_w = np.zeros((n, 3, 3))
    for _, j, m, c, inertia in pieces:
        d = c - centre_w[j]
        inertia_w[j] += inertia + m * (d @ d * np.eye(3) - np.outer(d, d))
    # into each joint's own frame at rest
    back = quat.conjugate(rot_w[:n])
    com = quat.rotate(back, centre_w - pos[:n])
    rmat = quat.matrix_from_quat(rot_w[:n])
    inertia = np.einsum("jba,jbc,jcd->jad", rmat, inertia_w, rmat)
    segments = {name: j for name, j, *_ in pieces}
    return Body(skeleton, mass, com, inertia, metres, segments)
