"""Computer puppetry (Shin, Lee, Shin & Gleicher 2001): a performer's sensors drive a character.

Every frame, the sensors of a performer (a world position and orientation at
each joint, as a magnetic or optical system reports them) go in and the
character's pose comes out, from this frame's and earlier frames' sensors
only. The stages, in the paper's order:

1. **filter** (section 3): :class:`retarget.filters.SensorFilter`, one
   batched Kalman update for all sensors; it also gives each sensor's
   velocity;
2. **captured posture**: the performer's local joint rotations from the
   filtered world orientations (``q_j = Q_parent⁻¹ Q_j``), copied by joint
   name onto the character; the captured root position is the root sensor's;
3. **importance** (section 4, eqs. 11-15): of the four end-effectors
   (ankles, wrists) from the performer's distances to the objects
   (:mod:`retarget.importance`), with the filtered velocities for ``ḋ``;
4. **goals**: the performer's end-effector positions (unscaled, as in the
   paper), each foot's raised or lowered by the difference of the character's
   and the performer's ankle clearance so the character's sole meets the
   floor where the performer's does;

   4b. **foot hold** (beyond the paper; ``hold_feet=False`` turns it off):
   the paper's goals follow the performer's feet wherever they go, so a
   character gets the performer's foot skate, and one shorter than the
   performer more of it per its own height (Blubby: the source's 2.04 %H/s
   times the height ratio 1.118). Each foot gets a plant weight ``s`` in
   [0, 1], the max over its points (ankle, toe) of ``g(gap) g(speed)``: ``g``
   falls smoothly from 1 to 0 between 2 % and 4 % of the performer's height
   above the point's clearance, and between 15 % and 30 % of height per
   second of horizontal speed (DESIGN.md's contact thresholds are 4 % and
   25 %/s). A horizontal offset ``o`` is added to the foot's goal:
   ``o_t = s (o_{t−1} − Δg_t + Δroll_t) + (1 − s) κ^{lift} o_{t−1}``, with
   ``Δg`` the goal's own horizontal step, so a planted foot's goal stays where
   it was, except that it turns with the foot about the sole's pivot
   (``Δroll``: the ankle's step when the foot's orientation turns from the last
   frame's to this one about the point at ``u`` of the character's ankle-to-toe
   segment, ``u`` the point of the performer's segment with the smallest
   velocity, ``clip(−v_a·(v_t − v_a) / (|v_t − v_a|² + ε²), 0, 1)``: a heel
   strike turns about the heel, a push-off about the ball of the foot). As the
   foot leaves the ground (``lift``, 1 minus the largest gap weight of its
   points) the offset decays with the time constant ``release`` (0.2 s) and
   the goal returns to the performer's foot. A planted foot's importance is at
   least ``s`` (it is fully important: the limb IK reaches its goal). Causal:
   the state is the last frame's offset, goal, orientation and pivot;
5. **root position** (section 5.1, eqs. 16-17, Appendix):
   :func:`retarget.ik.root.estimate_root`. The radius of each ball is the
   reach of the soft limb (stage 7) for a goal at the limb's full length
   ``L``, ``l_i = L (1 − softness / e)``: with the paper's ``l_i = L`` a goal
   on the ball's surface is not reached, by up to 1.8 % of the leg, and that
   shortfall, changing from frame to frame, made a short character's feet
   slide;
6. **body posture** (section 5.2, eqs. 18-20): only on frames where a goal
   is still out of its ball ``r_i = l_i / w_i``; conjugate gradient
   (:func:`retarget.ik.posture.solve_body_posture`), iterations counted;
7. **limbs** (section 5.3): :func:`retarget.ik.limb.solve_limb` with the
   swivel chosen in closed form closest to the captured shoulder or hip
   (``swivel_mode="nearest"``, eqs. 21-23) and the sensor's orientation as
   the hand or foot orientation; the reach is soft (beyond the paper:
   :func:`retarget.ik.limb.soft_reach` over the last 5 % of each limb's
   reach), so a knee eases into full extension instead of snapping there
   when a short leg's goal crosses its reach;
8. **blend** (eq. 24): ``slerp(q*, q_ik, w_i)`` for the limb's three joints;
9. **penetration fix** (end of section 5.3): an end-effector inside one of its
   objects moves to where the ray from its upper joint to it meets the
   object's surface, by the limb IK again.

Stages 2-9 of a frame depend only on that frame's filtered sensors, so a
recording is processed by running the filter's recursion over the frames
and then stages 2-9 vectorised over all frames (:func:`solve_frames`).
:meth:`Puppeteer.step` runs them on one frame as one compiled call
(:mod:`retarget.online._puppet_kernel`: the same formulas, for numpy's
overhead per call on one frame was nearly all of the time), and falls back
to :func:`solve_frames` on a frame that needs the body posture (stage 6), on
a filtered sensor that is not finite, and for a puppet the compiled frame
does not support (objects other than floors, boxes and spheres; see
:func:`retarget.online._puppet_kernel.frame_plan`). Either way frame ``t`` of
the output depends on sensor frames ``0..t`` only.

**Calibration.** Joint clearances (how high an ankle sits above the floor it
stands on) are measured on the first frame: in each foot's pose, the height
of the ankle above the foot's lowest point (ankle, toe, toe tip), for the
performer with its captured rotations and for the character with the same
rotations. Hands have clearance 0: the wrist is the point that rests.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import quat
from ..contacts import UP
from ..environment import Floor, Shape
from ..filters import KalmanParameters, SensorEstimate, SensorFilter
from ..ik.limb import Limb, hinge_angle, limb_from_roles, solve_limb
from ..ik.posture import solve_body_posture
from ..ik.root import estimate_root
from ..importance import end_effector_importance
from ..kinematics import forward_kinematics
from ..motion import Motion
from ..roles import find_roles, height
from ..skeleton import Skeleton
from ._puppet_kernel import SOLVED, FramePlan, _frame, frame_plan, hold_arguments, hold_feet

__all__ = ["EFFECTORS", "Puppet", "PuppetFrames", "Puppeteer", "make_puppet", "solve_frames"]

Array = NDArray[np.float64]

#: The end-effectors, in the order of every per-end-effector array.
EFFECTORS = ("left_foot", "right_foot", "left_hand", "right_hand")
_LIMBS = (("left", "leg"), ("right", "leg"), ("left", "arm"), ("right", "arm"))
STAGES = ("filter", "captured", "importance", "root", "posture", "limbs", "penetration")


@dataclass(frozen=True, eq=False)
class Puppet:
    """The fixed set-up: performer, character, environment and options.

    Build with :func:`make_puppet`. Arrays are per end-effector in the order
    of :data:`EFFECTORS`.

    Attributes
    ----------
    performer, character : Skeleton
    sensor_of : ndarray of int, shape (J_character,)
        The performer joint (sensor) whose rotation each character joint copies.
    limbs : tuple of Limb
        The character's legs and arms.
    effectors : ndarray of int, shape (4,)
        The performer's ankle and wrist joints (sensors).
    objects : tuple of Shape
    influence : ndarray, shape (4, m)
        ``D_ij`` of eq. 13 (length unit); 0 for pairs that do not interact.
    lookahead : float
        ``λ`` of eq. 12, seconds.
    clearance : ndarray, shape (4,)
        The performer's end-effector clearances (goals, importance).
    contacts : ndarray of int, shape (P,)
        The performer's joints whose distances to the objects make the
        importance: each end-effector, and each foot's toe (module docstring).
    contact_owner : ndarray of int, shape (P,)
        The end-effector (0..3) each of them counts for.
    contact_clearance : ndarray, shape (P,)
    toe_offsets : ndarray, shape (2, 3)
        The character's toe joints in their ankles' frames.
    character_clearance : ndarray, shape (4,)
        The character's (goals and the penetration fix).
    foot_scale : ndarray, shape (2,)
        Per foot, the character's ankle height above its foot's lowest point over
        the performer's: the character's clearances are the performer's times it.
    lengths : ndarray, shape (4,)
        ``l_i`` of eq. 17, the radii of the reach balls: the distance from the
        upper joint to the end-effector that the soft limb attains for a goal
        at its full length ``L``, ``L (1 − softness / e)`` (module docstring).
    character_height : float
    root_estimation : bool
        Section 5.1 on (the default) or off (the "without" column of Table I:
        the root starts at the captured root position).
    alpha, beta, gamma : float
        Weights of eqs. 18 and 20.
    softness : float
        Soft reach of the limb IK (:func:`retarget.ik.limb.soft_reach`): the
        share of each limb's reach near full extension over which a goal is
        eased, so that a knee does not snap straight when a short-legged
        character's foot goal crosses its reach (module docstring).

    The foot hold (stage 4b):

    fps : float
        Sensor rate (Hz).
    hold_feet : bool
        Stage 4b on (the default) or off (the paper's goals).
    plant_gap, plant_speed : ndarray, shape (2,)
        Where a foot point's plant weight starts to fall and where it is 0: its
        height above its clearance (unit) and its horizontal speed (unit/s).
    pivot_speed : float
        Regularises the sole's pivot (unit/s).
    release : float
        Time constant (s) in which a lifted foot's goal returns to the performer's.
    """

    performer: Skeleton
    character: Skeleton
    sensor_of: NDArray[np.intp]
    limbs: tuple[Limb, ...]
    effectors: NDArray[np.intp]
    objects: tuple[Shape, ...]
    influence: Array
    lookahead: float
    clearance: Array
    contacts: NDArray[np.intp]
    contact_owner: NDArray[np.intp]
    contact_clearance: Array
    toe_offsets: Array
    character_clearance: Array
    foot_scale: Array
    lengths: Array
    character_height: float
    fps: float
    hold_feet: bool
    plant_gap: Array
    plant_speed: Array
    pivot_speed: float
    release: float
    root_estimation: bool = True
    alpha: float = 0.01
    beta: float = 1.0
    gamma: float = 1.0
    softness: float = 0.05
    uppers: NDArray[np.intp] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "uppers", np.array([limb.upper for limb in self.limbs], dtype=np.intp)
        )


@dataclass(frozen=True, eq=False)
class PuppetFrames:
    """Output of :func:`solve_frames` for ``F`` frames.

    Attributes
    ----------
    root_position : ndarray, shape (F, 3)
    rotations : ndarray, shape (F, J, 4)
        The character's local rotations.
    importance : ndarray, shape (F, 4)
        ``w_i`` per end-effector (:data:`EFFECTORS`).
    goals : ndarray, shape (F, 4, 3)
        The end-effector goals (the performer's, with the clearance offset).
    captured_root : ndarray, shape (F, 3)
    captured : ndarray, shape (F, J, 4)
        The captured posture on the character (stage 2).
    iterations : ndarray of int, shape (F,)
        Conjugate-gradient iterations of the body posture (0 when not run).
    residual : ndarray, shape (F, 4)
        Distance of each end-effector from its goal after the limb IK, before
        blending (0 = reached; the limb could not reach otherwise).
    penetration_fixed : ndarray of bool, shape (F, 4)
    planted : ndarray, shape (F, 2)
        Each foot's plant weight ``s`` (stage 4b; 0 with the hold off).
    hold : ndarray, shape (2, 10)
        The foot hold's state after the last frame: give it to the next call of
        :func:`solve_frames` to go on from there.
    seconds : dict of str to float
        Time spent in each stage (:data:`STAGES`), summed over the frames. On
        :meth:`Puppeteer.step`'s compiled path stages 2-9 are one call, timed as
        a whole: its time is under ``"captured"`` (the stage it starts with),
        the later stages show 0; a frame that fell back to :func:`solve_frames`
        has that function's stage times, plus the compiled call's under
        ``"captured"``.
    """

    root_position: Array
    rotations: Array
    importance: Array
    goals: Array
    captured_root: Array
    captured: Array
    iterations: NDArray[np.int64]
    residual: Array
    penetration_fixed: NDArray[np.bool_]
    planted: Array
    hold: Array
    seconds: dict[str, float]


# -- set-up --------------------------------------------------------------------------------


def _limb_length(skeleton: Skeleton, limb: Limb) -> float:
    """Longest reach of a limb (upper joint to lower joint), from the IK's own clamp."""
    rot = quat.identity(skeleton.num_joints)
    pos, _ = forward_kinematics(skeleton, np.zeros(3), rot)
    far = pos[limb.upper] + np.array([0.0, -1e3, 0.0]) * (1.0 + np.abs(pos).max())
    sol = solve_limb(skeleton, limb, np.zeros(3), rot, far)
    return float(np.linalg.norm(sol.reached - pos[limb.upper]))


def _foot_bottom(skeleton: Skeleton, positions: Array, side: str) -> float:
    """Height of the lowest point of a foot (ankle, toe, toe tip) in ``positions`` (P, 3)."""
    roles = find_roles(skeleton)
    foot = [roles[f"{side}_{r}"] for r in ("ankle", "toe", "toe_tip") if f"{side}_{r}" in roles]
    return float(positions[foot, UP].min())


def _foot_clearance(skeleton: Skeleton, rotations: Array, side: str) -> float:
    """Height of the ankle above its foot's lowest point, in the pose ``rotations`` (J, 4)."""
    pos, _ = forward_kinematics(skeleton, np.zeros(3), rotations)
    return float(pos[find_roles(skeleton)[f"{side}_ankle"], UP] - _foot_bottom(skeleton, pos, side))


def _flexing(limb: Limb, take: Motion | None) -> Limb:
    """The limb with hinge limits when its skeleton gives none (3-DOF BVH knees):
    flexion from the least seen in the calibration take (or 0) to at least 170°,
    so that a straight captured limb bent by the IK bends forward, never backward."""
    if np.isfinite(limb.hinge_limits).all() or take is None:
        return limb
    seen = hinge_angle(limb, take.rotations)
    lo = min(0.0, float(seen.min()))
    hi = max(np.radians(170.0), float(seen.max()))
    return Limb(
        limb.upper,
        limb.middle,
        limb.lower,
        limb.hinge_axis,
        np.array([lo, hi]),
        kind=limb.kind,
        side=limb.side,
        swivel_reference=limb.swivel_reference,
    )


def local_rotations(skeleton: Skeleton, world: ArrayLike) -> Array:
    """Local joint rotations from world orientations ``(..., J, 4)``: ``Q_parent⁻¹ ⊗ Q_j``."""
    w = np.asarray(world, dtype=np.float64)
    parents = skeleton.parents
    parent_w = w[..., np.maximum(parents, 0), :]
    local = quat.multiply(quat.conjugate(parent_w), w)
    local[..., parents < 0, :] = w[..., parents < 0, :]
    return local


def make_puppet(
    performer: Skeleton,
    character: Skeleton,
    calibration: ArrayLike,
    *,
    fps: float,
    objects: Sequence[Shape] = (),
    influence: ArrayLike | None = None,
    lookahead: float = 0.05,
    root_estimation: bool = True,
    alpha: float = 0.01,
    beta: float = 1.0,
    gamma: float = 1.0,
    softness: float = 0.05,
    calibration_positions: ArrayLike | None = None,
    hold_feet: bool = True,
    plant_gap: tuple[float, float] = (0.02, 0.04),
    plant_speed: tuple[float, float] = (0.15, 0.30),
    release: float = 0.2,
) -> Puppet:
    """A :class:`Puppet` for a performer and a character with the same joint names.

    Parameters
    ----------
    performer, character : Skeleton
    calibration : array_like, shape (J_performer, 4) or (F, J_performer, 4)
        Captured postures (local rotations) of the performer, the first one
        with the feet flat (usually the first frame): clearances are measured
        on it (module docstring). The character's knee and elbow hinge axes are
        estimated from them (:func:`retarget.ik.limb.estimate_hinge_axis`), from
        one posture as from a take of many (knees and elbows bending: better);
        a joint that does not turn in them at all takes the rest pose's axis,
        which is arbitrary for a straight rest limb (lafan's).
    calibration_positions : array_like, shape (F, J_performer, 3), optional
        The take's sensor positions: each ankle's clearance is then the 5th
        percentile of its height above the ground over the take (the
        character's scaled by the ratio of the feet's shapes in the first
        posture); without them, the ankle's height above its foot's lowest
        point in the first posture.
    objects : sequence of Shape
        The environment; default a floor at height 0.
    influence : array_like, shape (4, m) or broadcastable, optional
        ``D_ij`` (performer's unit). Default: 30 % of the performer's height
        for every pair.
    fps : float
        Sensor rate (Hz).
    lookahead, root_estimation, alpha, beta, gamma, softness, hold_feet, release
        See :class:`Puppet`.
    plant_gap, plant_speed : (float, float)
        See :class:`Puppet`, as shares of the performer's height (and per second).
    """
    missing = [n for n in character.names if n not in set(performer.names)]
    if missing:
        from ..errors import RetargetError

        raise RetargetError(
            f"the character has joints the performer lacks: {missing[:8]}; "
            "puppetry needs the performer's joint names on the character"
        )
    objects = tuple(objects) if len(objects) else (Floor(0.0),)
    h_perf = height(performer)
    if not (fps > 0 and release >= 0 and 0 <= plant_gap[0] <= plant_gap[1]):
        raise ValueError(
            f"Expected fps > 0, release >= 0 and 0 <= plant_gap[0] <= plant_gap[1], got "
            f"{fps}, {release}, {plant_gap}"
        )
    if not 0 <= plant_speed[0] <= plant_speed[1]:
        raise ValueError(f"Expected 0 <= plant_speed[0] <= plant_speed[1], got {plant_speed}")
    big_d = (
        np.full((4, len(objects)), 0.3 * h_perf)
        if influence is None
        else np.broadcast_to(np.asarray(influence, dtype=np.float64), (4, len(objects))).copy()
    )
    roles_p, roles_c = find_roles(performer), find_roles(character)
    sensor_of = np.asarray(performer.indices(character.names), dtype=np.intp)
    takes = np.asarray(calibration, dtype=np.float64)
    if takes.shape[-2:] != (performer.num_joints, 4) or takes.ndim not in (2, 3):
        raise ValueError(
            f"Expected `calibration` of shape ([F,] {performer.num_joints}, 4), got {takes.shape}"
        )
    takes = takes.reshape(-1, performer.num_joints, 4)
    # the axes from the postures given, however many (one frame tells what thirty
    # repeats of it tell: a clip of one frame is retargeted as a still clip is)
    take = Motion(character, np.zeros((len(takes), 3)), takes[:, sensor_of], 30.0)
    limbs = tuple(
        _flexing(limb_from_roles(character, roles_c, s, k, take), take) for s, k in _LIMBS
    )
    effectors = np.array(
        [roles_p[f"{s}_{'ankle' if k == 'leg' else 'wrist'}"] for s, k in _LIMBS], dtype=np.intp
    )
    cal_p = takes[0]
    cal_c = cal_p[sensor_of]
    toes = [roles_p[f"{s}_toe"] for s, _ in _LIMBS[:2] if f"{s}_toe" in roles_p]
    contacts = np.array([*effectors, *toes], dtype=np.intp)
    owner = np.array([0, 1, 2, 3, *range(len(toes))], dtype=np.intp)
    if calibration_positions is None:
        cal_pos, _ = forward_kinematics(performer, np.zeros(3), cal_p)
        lowest = np.array([_foot_bottom(performer, cal_pos, s) for s, _ in _LIMBS[:2]])
        planted = cal_pos[contacts, UP] - lowest[owner.clip(max=1)]
    else:  # how high each point is when it rests on the ground: a low percentile
        feet = np.asarray(calibration_positions, dtype=np.float64)[:, contacts]
        ground = np.max([s.ground_height(feet[..., [0, 2]]) for s in objects], axis=0)
        planted = np.percentile(feet[..., UP] - ground, 5.0, axis=0)
    planted[2:4] = 0.0  # wrists
    clearance = planted[:4].copy()
    shape_p = np.array([_foot_clearance(performer, cal_p, s) for s, _ in _LIMBS[:2]])
    shape_c = np.array([_foot_clearance(character, cal_c, s) for s, _ in _LIMBS[:2]])
    foot_scale = np.where(shape_p > 0.0, shape_c / np.where(shape_p > 0.0, shape_p, 1.0), 1.0)
    char_clear = np.concatenate([clearance[:2] * foot_scale, [0.0, 0.0]])
    big_d.setflags(write=False)
    return Puppet(
        performer=performer,
        character=character,
        sensor_of=sensor_of,
        limbs=limbs,
        effectors=effectors,
        objects=objects,
        influence=big_d,
        lookahead=float(lookahead),
        clearance=clearance,
        contacts=contacts,
        contact_owner=owner,
        contact_clearance=planted,
        toe_offsets=np.array(
            [character.offsets[roles_c[f"{s}_toe"]] for s, _ in _LIMBS[:2] if toes]
        ).reshape(-1, 3),
        character_clearance=char_clear,
        foot_scale=foot_scale,
        lengths=np.array([_limb_length(character, limb) for limb in limbs])
        * (1.0 - softness / math.e),
        character_height=height(character),
        fps=float(fps),
        hold_feet=bool(hold_feet),
        plant_gap=np.asarray(plant_gap, dtype=np.float64) * h_perf,
        plant_speed=np.asarray(plant_speed, dtype=np.float64) * h_perf,
        pivot_speed=0.01 * h_perf,
        release=float(release),
        root_estimation=bool(root_estimation),
        alpha=float(alpha),
        beta=float(beta),
        gamma=float(gamma),
        softness=float(softness),
    )


# -- the per-frame stages, vectorised over frames ------------------------------------------


def _surface_hit(
    objects: Sequence[Shape], start: Array, end: Array, clearance: Array, steps: int = 40
) -> Array:
    """Where the segment ``start → end`` (..., 3) first comes within ``clearance`` of
    the objects, by bisection on the signed distance (``start`` outside, ``end`` inside)."""

    def gap(p: Array) -> Array:
        return np.min([s.distance(p) for s in objects], axis=0) - clearance

    lo = np.zeros(start.shape[:-1])
    hi = np.ones(start.shape[:-1])
    d = end - start
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        inside = gap(start + mid[..., None] * d) < 0
        hi = np.where(inside, mid, hi)
        lo = np.where(inside, lo, mid)
    hit = start + lo[..., None] * d
    # an upper joint itself inside (an object at shoulder height): no such ray; the
    # nearest point of the surface grown by the clearance instead
    trapped = gap(start) < 0
    if trapped.any():
        nearest = np.argmin([s.distance(end) for s in objects], axis=0)
        for k, shape in enumerate(objects):
            c = shape.closest(end)
            out = c.point + clearance * c.normal
            hit = np.where((trapped & (nearest == k))[..., None], out, hit)
    return hit


def solve_frames(
    puppet: Puppet, sensors: SensorEstimate, hold: Array | None = None
) -> PuppetFrames:
    """Stages 2-9 for filtered sensor frames (module docstring), vectorised over frames.

    Stage 4b, the foot hold, is a recursion over the frames (compiled, the
    same function as :meth:`Puppeteer.step`'s); the other stages are vectorised.

    Parameters
    ----------
    puppet : Puppet
    sensors : SensorEstimate
        Filtered sensors with a leading frame axis: positions (F, S, 3),
        orientations (F, S, 4), velocities (F, S, 3); ``S`` is the performer's
        joint count.
    hold : ndarray, shape (2, 10), optional
        The foot hold's state after the frame before the first (``hold`` of the
        previous call's :class:`PuppetFrames`); default: no past.

    Returns
    -------
    PuppetFrames
    """
    seconds = dict.fromkeys(STAGES, 0.0)
    t0 = time.perf_counter()
    ch = puppet.character
    n_frames = sensors.positions.shape[0]
    # (2) the captured posture
    local = local_rotations(puppet.performer, sensors.orientations)
    captured = np.ascontiguousarray(local[:, puppet.sensor_of])
    captured_root = sensors.positions[:, 0].copy()
    t1 = time.perf_counter()
    seconds["captured"] += t1 - t0

    # (3) importance, (4) goals
    points = sensors.positions[:, puppet.effectors]
    imp = end_effector_importance(
        sensors.positions[:, puppet.contacts],
        sensors.velocities[:, puppet.contacts],
        puppet.objects,
        puppet.influence[puppet.contact_owner],
        clearance=puppet.contact_clearance,
        lookahead=puppet.lookahead,
    )
    w = np.zeros((n_frames, 4))  # eq. (15), the max also over a foot's points
    for k, owner in enumerate(puppet.contact_owner):
        w[:, owner] = np.maximum(w[:, owner], imp.weights[:, k])
    goals = points.copy()
    goals[..., UP] += puppet.character_clearance - puppet.clearance
    if len(puppet.contacts) > 4:  # feet: pivot on the toe as much as it is the planted point
        toe_w = imp.weights[:, 4:]
        share = toe_w / np.maximum(toe_w + imp.weights[:, :2], 1e-9)
        toe = sensors.positions[:, puppet.contacts[4:]]
        toe_c = puppet.contact_clearance[4:] * puppet.foot_scale[:2]
        toe[..., UP] += toe_c - puppet.contact_clearance[4:]
        ankle_world = sensors.orientations[:, puppet.effectors[:2]]
        from_toe = toe - quat.rotate(ankle_world, puppet.toe_offsets)
        goals[:, :2] += share[..., None] * (from_toe - goals[:, :2])
    # (4b) the foot hold, and a planted foot's importance
    state = np.zeros((2, 10)) if hold is None else np.array(hold, dtype=np.float64)
    planted = np.zeros((n_frames, 2))
    if puppet.hold_feet:
        interacts = puppet.influence[puppet.contact_owner] > 0  # (P, m)
        gap = np.where(interacts, imp.distance, np.inf).min(axis=-1, initial=np.inf)  # (F, P)
        feet = np.full((n_frames, 2, 2), np.inf)
        feet_v = np.zeros((n_frames, 2, 2, 3))
        feet[:, :, 0], feet_v[:, :, 0] = gap[:, :2], sensors.velocities[:, puppet.effectors[:2]]
        if len(puppet.contacts) > 4:
            feet[:, :, 1] = gap[:, 4:]
            feet_v[:, :, 1] = sensors.velocities[:, puppet.contacts[4:]]
        feet_q = np.ascontiguousarray(sensors.orientations[:, puppet.effectors[:2]])
        hold_feet(goals, feet, feet_v, feet_q, *hold_arguments(puppet), state, planted)
        w[:, :2] = np.maximum(w[:, :2], planted)
    t2 = time.perf_counter()
    seconds["importance"] += t2 - t1

    # (5) root position
    pos, _ = forward_kinematics(ch, captured_root, captured)
    lowers = np.array([limb.lower for limb in puppet.limbs])
    uppers = puppet.uppers
    if puppet.root_estimation:
        est = estimate_root(captured_root, pos[:, lowers], goals, pos[:, uppers], puppet.lengths, w)
        root = np.array(est.position)
    else:
        root = captured_root.copy()
    t3 = time.perf_counter()
    seconds["root"] += t3 - t2

    # (6) body posture, only where a goal is out of its ball
    with np.errstate(divide="ignore"):
        radii = np.where(w > 0, puppet.lengths / w, np.inf)
    upper_at = pos[:, uppers] + (root - captured_root)[:, None]
    gap = np.linalg.norm(upper_at - goals, axis=-1) - radii
    tolerance = 1e-9 * puppet.character_height
    need = np.flatnonzero((gap > tolerance).any(axis=-1))
    rotations = captured.copy()
    iterations = np.zeros(n_frames, dtype=np.int64)
    for f in need:
        body = solve_body_posture(
            ch,
            root[f],
            captured[f],
            uppers,
            goals[f],
            radii[f],
            height=puppet.character_height,
            alpha=puppet.alpha,
            beta=puppet.beta,
            gamma=puppet.gamma,
        )
        root[f], rotations[f] = body.root_position, body.rotations
        iterations[f] = body.iterations
    t4 = time.perf_counter()
    seconds["posture"] += t4 - t3

    # (7) limbs, (8) blend
    world_p = sensors.orientations[:, puppet.effectors]
    reference = rotations.copy()  # captured limbs on the adjusted body
    residual = np.zeros((n_frames, 4))
    for i, limb in enumerate(puppet.limbs):
        sol = solve_limb(
            ch,
            limb,
            root,
            reference,
            goals[:, i],
            orientation=world_p[:, i],
            swivel_mode="nearest",
            softness=puppet.softness,
        )
        residual[:, i] = sol.residual
        joints = list(limb.joints)
        rotations[:, joints] = quat.slerp(
            reference[:, joints], sol.rotations[:, joints], w[:, i, None]
        )
    t5 = time.perf_counter()
    seconds["limbs"] += t5 - t4

    # (9) penetration
    fixed = np.zeros((n_frames, 4), dtype=bool)
    pos, _ = forward_kinematics(ch, root, rotations)
    for i, limb in enumerate(puppet.limbs):
        mine = [s for s, d in zip(puppet.objects, puppet.influence[i], strict=True) if d > 0]
        if not mine:
            continue
        effector = pos[:, limb.lower]
        depth = np.min([s.distance(effector) for s in mine], axis=0)
        inside = np.flatnonzero(depth < puppet.character_clearance[i] - tolerance)
        if not len(inside):
            continue
        hit = _surface_hit(
            mine, pos[inside, limb.upper], effector[inside], puppet.character_clearance[i]
        )
        sol = solve_limb(
            ch,
            limb,
            root[inside],
            rotations[inside],
            hit,
            swivel_mode="nearest",
            softness=puppet.softness,
        )
        rotations[inside] = sol.rotations
        fixed[inside, i] = True
    seconds["penetration"] += time.perf_counter() - t5
    return PuppetFrames(
        root_position=root,
        rotations=rotations,
        importance=w,
        goals=goals,
        captured_root=captured_root,
        captured=captured,
        iterations=iterations,
        residual=residual,
        penetration_fixed=fixed,
        planted=planted,
        hold=state,
        seconds=seconds,
    )


def _solve_compiled(plan: FramePlan, sensors: Array, hold: Array) -> PuppetFrames | None:
    """Stages 2-9 of one filtered frame in one compiled call, as :func:`solve_frames`
    gives them for that frame (:mod:`retarget.online._puppet_kernel`).

    Parameters
    ----------
    plan : FramePlan
        The puppet's (:func:`retarget.online._puppet_kernel.frame_plan`).
    sensors : ndarray, shape (S, 13)
        The filtered frame as :class:`retarget.filters.SensorFilter` packs it
        (position, orientation, velocity, angular velocity), a writable C array.
    hold : ndarray, shape (2, 10)
        The foot hold's state after the previous frame (not changed).

    Returns
    -------
    PuppetFrames or None
        One frame (seconds all 0), or None when the frame needs the body
        posture or a sensor is not finite: then :func:`solve_frames` must pose it.
    """
    j = plan.num_joints
    root, captured_root = np.empty((1, 3)), np.empty((1, 3))
    rotations, captured = np.empty((1, j, 4)), np.empty((1, j, 4))
    importance, residual = np.empty((1, 4)), np.empty((1, 4))
    goals = np.empty((1, 4, 3))
    fixed = np.empty((1, 4), dtype=bool)
    state, planted = np.array(hold, dtype=np.float64), np.empty((1, 2))
    status = _frame(
        sensors,
        root,
        rotations,
        importance,
        goals,
        captured_root,
        captured,
        residual,
        fixed,
        state,
        planted,
        *plan.arguments,
    )
    if status != SOLVED:
        return None
    return PuppetFrames(
        root_position=root,
        rotations=rotations,
        importance=importance,
        goals=goals,
        captured_root=captured_root,
        captured=captured,
        iterations=np.zeros(1, dtype=np.int64),
        residual=residual,
        penetration_fixed=fixed,
        planted=planted,
        hold=state,
        seconds=dict.fromkeys(STAGES, 0.0),
    )


class Puppeteer:
    """The online object: one sensor frame in, one character pose out (causal).

    Parameters
    ----------
    performer, character : Skeleton
    fps : float
        Sensor rate (Hz).
    filter_parameters : KalmanParameters, optional
        Default :class:`retarget.filters.KalmanParameters`.
    calibration : Motion, optional
        A take of the performer (its skeleton): clearances and hinge axes are
        measured on it (:func:`make_puppet`); without it, on the first frame
        after :meth:`reset`.
    **options
        Passed to :func:`make_puppet` (objects, influence, lookahead,
        root_estimation, alpha, beta, gamma, softness).
    """

    def __init__(
        self,
        performer: Skeleton,
        character: Skeleton,
        *,
        fps: float,
        filter_parameters: KalmanParameters | None = None,
        calibration: Motion | None = None,
        **options: object,
    ) -> None:
        self.performer = performer
        self.character = character
        self.fps = float(fps)
        self._options: Mapping[str, object] = dict(options)
        self.calibration = calibration
        self._filter = SensorFilter(
            performer.num_joints,
            filter_parameters if filter_parameters is not None else KalmanParameters(),
            fps,
        )
        self.puppet: Puppet | None = None
        self._plan: FramePlan | None = None
        self._hold = np.zeros((2, 10))
        self.last: PuppetFrames | None = None
        self.frames = 0

    def reset(self) -> None:
        """Forget the past: the next frame re-initialises the filter and recalibrates."""
        self._filter.reset()
        self.puppet = None
        self._plan = None
        self._hold = np.zeros((2, 10))
        self.last = None
        self.frames = 0

    def step(self, positions: ArrayLike, orientations: ArrayLike) -> tuple[Array, Array]:
        """Filter one sensor frame and pose the character.

        Parameters
        ----------
        positions : array_like, shape (S, 3)
            World sensor positions, one per performer joint (NaN: sensor lost).
        orientations : array_like, shape (S, 4)
            World sensor orientations.

        Returns
        -------
        root_position : ndarray, shape (3,)
        rotations : ndarray, shape (J, 4)
            The character's local rotations. :attr:`last` holds the frame's
            importance, goals, iterations and stage times (stages 2-9 of the
            compiled path timed as one, under ``"captured"``: :class:`PuppetFrames`).
        """
        t0 = time.perf_counter()
        sensors = self._filter._measure(positions, orientations)
        t1 = time.perf_counter()
        if self.puppet is None:
            if self.calibration is not None:
                take = self.calibration
                cal = take.rotations
                cal_pos = forward_kinematics(take.skeleton, take.root_position, take.rotations)[0]
                cal_pos = cal_pos[:, : take.skeleton.num_joints]
            else:
                cal, cal_pos = local_rotations(self.performer, sensors[:, 3:7]), None
            self.puppet = make_puppet(
                self.performer,
                self.character,
                cal,
                fps=self.fps,
                calibration_positions=cal_pos,
                **self._options,  # type: ignore[arg-type]
            )
            self._plan = frame_plan(self.puppet)
        t2 = time.perf_counter()
        out = None if self._plan is None else _solve_compiled(self._plan, sensors, self._hold)
        t3 = time.perf_counter()
        if out is None:
            est = SensorEstimate._from_packed(sensors[None])
            out = solve_frames(self.puppet, est, self._hold)
        self._hold = out.hold
        out.seconds["captured"] += t3 - t2
        out.seconds["filter"] += t1 - t0
        self.last = out
        self.frames += 1
        return out.root_position[0], out.rotations[0]
