"""Computer puppetry (Shin, Lee, Shin & Gleicher 2001): a performer's sensors drive a character.

Every frame, the sensors of a performer (a world position and orientation at
each joint, as a magnetic or optical system reports them) go in and the
character's pose comes out, from this frame's and earlier frames' sensors
only. The stages, in the paper's order:

1. **filter** (section 3): :class:`retarget.filters.SensorFilter`, one
   batched Kalman update for all sensors; it also gives each sensor's
   velocity;

   1b. **stride** (beyond the paper, whose goals are unscaled): on a flat
   floor (every object a :class:`~retarget.environment.Floor`) every sensor's
   horizontal position is taken about the first frame's root, and its
   horizontal velocity, times ``stride = min(1, character's leg length /
   performer's)``; heights are not scaled. A character with legs 65 % of the
   performer's (Blubby) then takes strides its legs can take; one with longer
   legs (Sally) keeps the performer's. With the performer's own footprints,
   Blubby's swinging foot had to cover the performer's stride in the
   performer's time: on ``bvhtoolbox_walk01.bvh`` (24 fps) the performer's
   ankle steps 1.5-1.9 % of height a frame farther than the source carried
   onto Blubby, on average over each swing (up to 3.3 in one frame), so no
   smoothing could keep a knee or ankle within 1.5 % of the carried source's
   step (the pop of :func:`retarget.humanoid.metrics.pop`), and its path's jerk was
   twice that of the carried ankle. A floor looks the same after the scaling;
   a box, a sphere or a height field would not, so with those the positions
   are the paper's (``stride=1``);
2. **captured posture**: the performer's local joint rotations from the
   filtered world orientations (``q_j = Q_parent⁻¹ Q_j``), copied by joint
   name onto the character; the captured root position is the root sensor's;
3. **importance** (section 4, eqs. 11-15): of the four end-effectors
   (ankles, wrists) from the performer's distances to the objects
   (:mod:`retarget.online.importance`), with the filtered velocities for ``ḋ``; a
   foot's is that of its ankle and its toe in union, ``1 − (1 − w_ankle)
   (1 − w_toe)`` (beyond the paper, which has one point per end-effector: the
   max of the two had a kink where they cross, a jump in the importance's
   rate that went on into the root);
4. **goals**: the performer's end-effector positions, each foot's raised or
   lowered by the difference of the character's and the performer's ankle
   clearance so the character's sole meets the floor where the performer's
   does; each foot's under the character's own hip (moved along the floor by
   where that hip is from the performer's), toward the ankle position that
   puts the character's toe on the performer's by the toe's share
   ``w_toe / max(w_toe + w_ankle, 1)`` (:func:`toe_share`), and (beyond the
   paper) on a flat floor its rise above the clearance taken at the legs'
   scale beyond 5-15 % of the height (:data:`LIFT_BAND`,
   :func:`~retarget.online._kernels.puppetry.leg_lift`): a kick behind bends
   a short-legged character's knee as the performer's instead of swinging its
   thigh back to reach the performer's height (issue 40);

   4b. **foot hold** (beyond the paper; ``hold_feet=False`` turns it off):
   the paper's goals follow the performer's feet wherever they go, so a
   character gets the performer's foot skate, and one shorter than the
   performer more of it per its own height (Blubby: the source's 2.04 %H/s
   times the height ratio 1.118). Each foot gets a plant weight ``s`` in
   [0, 1]: the max over its points (ankle, toe) of ``g(gap) g(speed)``, ``g``
   falling from 1 to 0 by the C2 ramp ``1 − t³ (10 − 15t + 6t²)`` between 2 %
   and 4 % of the performer's height above the point's clearance, and between
   15 % and 30 % of height per second of horizontal speed (DESIGN.md's
   contact thresholds are 4 % and 25 %/s), then through three first-order
   lags of time constant ``plant_smoothing`` (20 ms; they start at 0, not
   planted, on the first frame). Without the lags a foot's gap and speed
   cross the gates within one or two frames, and ``s`` stepped from 0 to 1 as
   a foot landed and back as it left: its goal stopped and started in a frame
   (a jump in its velocity), the root with it. A horizontal offset ``o`` is
   added to the foot's goal:
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
   the goal returns to the performer's foot. A planted foot's importance is
   ``s`` in union with the foot's own, ``1 − (1 − w)(1 − s)``: 1 when planted
   (the limb IK reaches its goal). Causal: the state is the last frame's
   offset, goal, orientation, pivot and the lags of ``s``. Through frames whose
   sensors the filter predicted (a gap in a stream, a sensor lost) the hold goes
   on with the prediction; the step back to the next measured frame is held
   only as much as the foot was planted before it and is now, about the pivot
   of now: the jump from prediction to measurement is no slide of the foot
   (``_puppet_kernel.hold_feet``);
5. **root position** (section 5.1, eqs. 16-17, Appendix), made C2 in time
   (beyond the paper; below, "The smooth root"):

   a. the balls' importance ``w_r = max(w, lag(w))``, ``lag`` three
      first-order lags of time constant ``radius_release`` (50 ms): a hand's
      rising importance acts at once, a falling one only as fast as the lags let
      it go; a foot's ``w_r = lag(w)``, rising through the lags too (a foot
      coming down fast from a kick turned its limb from the captured posture to
      its goal in two frames: issue 40). A foot's limb blends (stage 8) with
      this ``w_r`` too;
   b. the paper's estimate, :func:`retarget.ik.root.estimate_root` (eq. 16's
      offset, then the closest point of the balls), with the radius
      ``r_i = l_i (1 − w_r + w_r²) / w_r`` instead of eq. 17's ``l_i / w_r``:
      both are ``l_i`` at ``w_r = 1`` and ``+∞`` at 0, but this one leaves
      ``w_r = 1`` with zero slope. ``l_i`` is the reach of the soft limb
      (stage 7) for a goal at the limb's full length ``L``, ``l_i = L (1 −
      softness / e)``: with the paper's ``l_i = L`` a goal on the ball's
      surface is not reached, by up to 1.8 % of the leg, and that shortfall,
      changing from frame to frame, made a short character's feet slide;
   c. the anchor: the captured root plus the estimate's offset from it through
      three first-order lags of time constant ``root_smoothing`` (30 ms);
   d. the root: the closest point to the anchor of the balls' smoothed
      intersection (:func:`retarget.online._kernels.puppetry.smooth_root`): each
      ball pushes the point inward over a zone from ``root_zone`` (6 %) of
      its limb's length inside its sphere to ``root_slack`` (8 %) outside it,
      with a force that starts with zero first three derivatives; a point
      still outside a ball grown by ``root_slack`` takes the closest point of
      those balls (the paper's search). The root may so be up to
      ``root_slack`` beyond a ball, the foot or hand that much short of its
      goal, which the soft reach (stage 7) eases;
6. **body posture** (section 5.2, eqs. 18-20): only on frames where a goal
   is still out of its ball ``r_i + root_slack l_i`` (stage 5); conjugate
   gradient (:func:`retarget.ik.posture.solve_body_posture`), iterations
   counted;
7. **limbs** (section 5.3): :func:`retarget.ik.limb.solve_limb` with the
   swivel chosen in closed form closest to the captured shoulder or hip
   (``swivel_mode="nearest"``, eqs. 21-23) and the sensor's orientation as
   the hand or foot orientation; the reach is soft (beyond the paper:
   :func:`retarget.ik.limb.soft_reach` over the last 5 % of each limb's
   reach), so a knee eases into full extension instead of snapping there
   when a short leg's goal crosses its reach;
8. **blend** (eq. 24): ``slerp(q*, q_ik, w_i)`` for the limb's three joints
   (a foot's ``w_i`` is stage 5's ``w_r``);
9. **penetration fix** (end of section 5.3): an end-effector inside one of its
   objects moves to where the ray from its upper joint to it meets the
   object's surface, by the limb IK again, exactly (the point is on the
   segment the limb already spans: the soft reach of stage 7 a second time
   bent a near-straight knee some 4° more on the frames a foot was under its
   clearance, and it sprang back the frame it was not); a foot under a soft
   floor (:data:`PENETRATION_BAND`).

**The smooth root.** The paper argues (section 6) that continuous importance
gives continuous motion. Continuous, but not continuous in velocity: the
closest point of an intersection of balls moves with a jump in velocity
wherever the set of balls it lies on changes (inside → on a sphere → on the
circle of two → back), and again wherever a radius ``l / w`` starts to grow
(a foot's importance starting to fall as it lifts): on two nearly tangent
spheres, the point on their circle moves ``r / d`` times as fast as a radius
(``d`` the distance of the centres). On Blubby (short legs that reach the
performer's unscaled footprints only at full stretch) the root lunged:
on ``dme_xia_neutral_01.bvh`` (120 fps) its step went from 1.07 % of height
a frame to 1.57 and 2.07 in frames 88-89 (the captured root's: 0.85), then
back to 0.76, as the trailing foot's importance began to fall and its radius
grew; the mean squared jerk of the root was 826 times the source's, of the
whole body 116 times (on ``lafan_walk.bvh``: root 12, body 2.9). Each stage
that fed the root a kink or a jump in rate
now passes it on smoothly: the importance (the union, the C2 gates, the lags
of the plant weights, the lagged release ``w_r``, the radius with zero slope
at ``w = 1``), then the estimate itself (lags, a soft zone instead of the
sphere's hard wall: the soft closest point is the minimum of a strictly
convex C3 energy, so it moves C2 with its anchor and the balls). The paper's
closest point is still what the root follows (the anchor is its lagged
offset), and its hard search still bounds how far the root may go. All of
``plant_smoothing``, ``radius_release``, ``root_smoothing``, ``root_zone``
and ``root_slack`` 0 (:class:`Smoothing`, :data:`PAPER_SMOOTHING`): the paper's
stage 5 (the tests check it).
Per frame this adds two lag updates and a Newton solve of a 3-unknown convex
problem (a few iterations, about a microsecond).

**The online method** (:mod:`retarget.core.frames`): :class:`Puppeteer`,
``reset()`` and ``step(SensorFrame) -> PoseFrame``; the offline
:func:`retarget.methods.puppetry.puppetry_retarget` is a loop over it. Stages
2-9 of a frame depend only on that frame's filtered sensors and the state of
the recursions (the foot hold, the lags), so they can also run vectorised over
many frames, the recursions compiled (:func:`solve_frames`, after the filter's
recursion over the frames). :meth:`Puppeteer.step` runs them on one frame as
one compiled call (:mod:`retarget.online._kernels.puppetry`: the same formulas,
for numpy's overhead per call on one frame was nearly all of the time), and
falls back to :func:`solve_frames` on a frame that needs the body posture
(stage 6), on a filtered sensor that is not finite, and for a puppet the
compiled frame does not support (objects other than floors, boxes and
spheres; see :func:`frame_plan`). Either way frame ``t`` of the output depends
on sensor frames ``0..t`` only.

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
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array, frozen
from ..core.errors import RetargetError
from ..core.frames import PoseFrame, SensorFrame
from ..core.kinematics import forward_kinematics
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from ..environment import Floor, Shape, shape_arrays
from ..filters import KalmanParameters, SensorEstimate, SensorFilter
from ..filters.glitch import MAX_SPEED, SensorGate
from ..humanoid.contacts import UP
from ..humanoid.roles import find_roles, height, leg_length
from ..ik.limb import Limb, free_joint, hinge_angle, limb_from_roles, limb_geometry, solve_limb
from ..ik.posture import solve_body_posture
from ..ik.root import estimate_root
from ._kernels.puppetry import (
    HOLD_COLUMNS,
    SOLVED,
    STATE_SIZE,
    _frame,
    hold_feet,
    lag_coefficient,
    leg_lift,
    penetration_gap,
    radius_weights,
    smooth_root,
)
from .importance import end_effector_importance

__all__ = [
    "DEFAULT_SMOOTHING",
    "EFFECTORS",
    "PAPER_SMOOTHING",
    "FramePlan",
    "Puppet",
    "PuppetFrames",
    "Puppeteer",
    "Smoothing",
    "frame_plan",
    "make_puppet",
    "solve_frames",
]


#: The end-effectors, in the order of every per-end-effector array.
EFFECTORS = ("left_foot", "right_foot", "left_hand", "right_hand")
_LIMBS = (("left", "leg"), ("right", "leg"), ("left", "arm"), ("right", "arm"))
#: Stage 9's soft band, a share of the character's height: a foot under its clearance
#: is lifted toward it smoothly, and never left deeper than this (a hand exactly onto
#: it: :func:`retarget.online._kernels.puppetry.penetration_gap`).
PENETRATION_BAND = 0.005
#: Stage 4's lift band, shares of the character's height above a foot's clearance: up
#: to the first a foot goal is the performer's height (the clearances put the sole on
#: the floor), beyond the second each rise is taken at the legs' scale ``lift``, with a
#: smooth turn between (:func:`retarget.online._kernels.puppetry.leg_lift`).
LIFT_BAND = (0.05, 0.15)
STAGES = ("filter", "captured", "importance", "root", "posture", "limbs", "penetration")


@dataclass(frozen=True)
class Smoothing:
    """The lags of the plant weights (stage 4b) and the smooth root (stage 5): the
    extensions of the module docstring. All 0 but ``root_stiffness``
    (:data:`PAPER_SMOOTHING`): the paper's root estimate, the plant weights as
    they come.

    Attributes
    ----------
    plant_smoothing : float
        Time constant (s) of each of the three lags the plant weight goes through
        (0: none).
    radius_release : float
        Time constant (s) of each of the three lags of the importance that sizes the
        balls as it falls (0: the importance itself).
    root_smoothing : float
        Time constant (s) of each of the three lags of the root offset (0: none).
    root_zone : float
        How deep inside each ball its soft zone starts, a share of the limb length
        (:attr:`Puppet.lengths`), in [0, 1).
    root_slack : float
        How far beyond each ball the root may go, a share of the limb length: the
        soft zone ends there, the hard closest point takes over beyond, and the body
        posture (stage 6) runs only for a goal still farther. ``root_zone`` and
        ``root_slack`` both 0: the paper's closest point.
    root_stiffness : float
        ``K`` (> 0): a zone's push, per unit of its depth, where it is fully engaged.

    Raises
    ------
    ValueError
        A value not finite or out of its range.
    """

    plant_smoothing: float = 0.02
    radius_release: float = 0.05
    root_smoothing: float = 0.03
    root_zone: float = 0.06
    root_slack: float = 0.08
    root_stiffness: float = 1.0

    def __post_init__(self) -> None:
        values = [float(getattr(self, f.name)) for f in fields(self)]
        for f, value in zip(fields(self), values, strict=True):
            object.__setattr__(self, f.name, value)
        if not all(math.isfinite(x) and x >= 0 for x in values) or not (
            self.root_zone < 1 and self.root_stiffness > 0
        ):
            raise ValueError(
                "Expected finite plant_smoothing, radius_release, root_smoothing, "
                "root_slack >= 0, 0 <= root_zone < 1 and root_stiffness > 0, got "
                f"{tuple(values[:5])} and {self.root_stiffness}"
            )


#: The smoothing of :func:`make_puppet` and of
#: :func:`retarget.methods.puppetry.puppetry_retarget` unless told.
DEFAULT_SMOOTHING = Smoothing()
#: Every smoothing extension off: the paper's stage 5 and plant weights.
PAPER_SMOOTHING = Smoothing(0.0, 0.0, 0.0, 0.0, 0.0)


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

    The lags of the plant weights and the smooth root (stages 4b and 5, module
    docstring):

    smoothing : Smoothing

    The stride (stage 1b, module docstring):

    stride : float
        ``k``: the sensors' horizontal positions about ``origin`` and their
        horizontal velocities are taken times it (1: the paper's, unscaled).
    origin : ndarray, shape (3,)
        Where the scaling is about (its vertical coordinate is not used).
    lift : float
        ``k`` of :func:`~retarget.online._kernels.puppetry.leg_lift`: each foot goal's
        rise above the character's clearance beyond :data:`LIFT_BAND` is taken times
        it (stage 4; 1: the paper's, unscaled).
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
    smoothing: Smoothing = field(default_factory=Smoothing)
    stride: float = 1.0
    origin: Array = field(default_factory=lambda: np.zeros(3))
    lift: float = 1.0
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
    state : ndarray, shape (STATE_SIZE,)
        The state of the recursions over the frames after the last frame (the foot
        hold, the lags of the plant weights, of the balls' importance and of the
        root): give it to the next call of :func:`solve_frames` to go on from there.
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
    state: Array
    seconds: dict[str, float]


# -- set-up --------------------------------------------------------------------------------


def toe_share(toe: ArrayLike, ankle: ArrayLike) -> Array:
    """How far a foot's goal moves toward the ankle position that puts the toe on the
    performer's: ``w_toe / max(w_toe + w_ankle, 1)``, importances (…,) in [0, 1].

    The toe's share of the foot's importance where the two add up to 1 or more
    (both planted: half-way; the toe alone: all of it), and the toe's own
    importance below that, so the share fades with the foot's importance. Taken
    as ``w_toe / (w_toe + w_ankle)`` it was 0/0 as a foot left the floor: 1 while
    the toe's importance was the last to fall, 0 the frame it did, and a kicking
    foot's goal jumped 4.5 % of height sideways while the foot still weighed 0.6
    (issue 40).
    """
    toe, ankle = np.asarray(toe, np.float64), np.asarray(ankle, np.float64)
    return toe / np.maximum(toe + ankle, 1.0)


def _limb_length(skeleton: Skeleton, limb: Limb) -> float:
    """Longest reach of a limb (upper joint to lower joint), from the IK's own clamp."""
    rot = quat.identity(skeleton.num_joints)
    pos, _ = forward_kinematics(skeleton, np.zeros(3), rot)
    far = pos[limb.upper] + np.array([0.0, -1e3, 0.0]) * (1.0 + np.abs(pos).max())
    sol = solve_limb(skeleton, limb, np.zeros(3), rot, far)
    return float(np.linalg.norm(sol.reached - pos[limb.upper]))


def _strided(puppet: Puppet, sensors: SensorEstimate) -> SensorEstimate:
    """The sensors with their horizontal positions about ``puppet.origin`` and their
    horizontal velocities times ``puppet.stride`` (stage 1b; the same as the compiled
    frame's ``_stride``)."""
    if puppet.stride == 1.0:
        return sensors
    k, o = puppet.stride, puppet.origin
    positions = sensors.positions.copy()
    velocities = sensors.velocities.copy()
    for axis in (0, 2):  # x and z: UP is y
        positions[..., axis] = o[axis] + k * (positions[..., axis] - o[axis])
        velocities[..., axis] = k * velocities[..., axis]
    return SensorEstimate(positions, sensors.orientations, velocities, sensors.angular_velocities)


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
    smoothing: Smoothing = DEFAULT_SMOOTHING,
    stride: float | None = None,
    origin: ArrayLike | None = None,
    lift: float | None = None,
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
    smoothing : Smoothing
        The lags of the plant weights and the smooth root (:data:`PAPER_SMOOTHING`:
        the paper's root estimate and plant weights).
    stride : float, optional
        See :class:`Puppet`. Default: the ratio of the character's leg length to
        the performer's, at most 1, when every object is a :class:`Floor` (which
        scaling about a vertical axis leaves as it is); else 1.
    origin : array_like, shape (3,), optional
        See :class:`Puppet`. Default: the first of ``calibration_positions``' root
        positions, else 0.
    lift : float, optional
        See :class:`Puppet`. Default: the ratio of the character's leg length to the
        performer's when every object is a :class:`Floor`; else 1.
    """
    missing = [n for n in character.names if n not in set(performer.names)]
    if missing:
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
    armless = [r for r in ("left_shoulder", "right_shoulder") if r not in roles_c.points]
    if armless:  # (a robot that is a pair of legs and a trunk)
        raise RetargetError(
            "puppetry drives four limbs; the character has no arms "
            f"(roles found: {', '.join(roles_c.points)})"
        )
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
    flat = all(type(shape) is Floor for shape in objects)
    legs = float(leg_length(character) / leg_length(performer))
    if stride is None:
        stride = min(1.0, legs) if flat else 1.0
    if not (math.isfinite(stride) and stride > 0):
        raise ValueError(f"Expected a finite stride > 0, got {stride}")
    if lift is None:
        lift = legs if flat else 1.0
    if not (math.isfinite(lift) and lift > 0):
        raise ValueError(f"Expected a finite lift > 0, got {lift}")
    if origin is None:
        origin = (
            np.zeros(3)
            if calibration_positions is None
            else np.asarray(calibration_positions, dtype=np.float64).reshape(-1, 3)[0]
        )
    centre = np.array(origin, dtype=np.float64).reshape(3)
    if not np.isfinite(centre).all():
        centre = np.zeros(3)
    centre.setflags(write=False)
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
        smoothing=smoothing,
        stride=float(stride),
        origin=centre,
        lift=float(lift),
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
            out = c.point + np.asarray(clearance)[..., None] * c.normal
            hit = np.where((trapped & (nearest == k))[..., None], out, hit)
    return hit


def solve_frames(
    puppet: Puppet,
    sensors: SensorEstimate,
    state: Array | None = None,
    measured: ArrayLike | None = None,
) -> PuppetFrames:
    """Stages 2-9 for filtered sensor frames (module docstring), vectorised over frames.

    Stage 4b, the foot hold, the lags of stage 5 (the balls' importance, the root)
    and the soft closest point are recursions over the frames (compiled, the same
    functions as :meth:`Puppeteer.step`'s); the other stages are vectorised.

    Parameters
    ----------
    puppet : Puppet
    sensors : SensorEstimate
        Filtered sensors with a leading frame axis: positions (F, S, 3),
        orientations (F, S, 4), velocities (F, S, 3); ``S`` is the performer's
        joint count.
    state : ndarray, shape (STATE_SIZE,), optional
        The recursions' state after the frame before the first (``state`` of the
        previous call's :class:`PuppetFrames`); default: no past.
    measured : array_like of bool, shape (F, S), optional
        Whether each sensor was measured at each frame (else the filter predicted
        it): the foot hold's step back from predicted frames
        (:func:`~retarget.online._kernels.puppetry.hold_feet`). Default: all measured.

    Returns
    -------
    PuppetFrames
    """
    seconds = dict.fromkeys(STAGES, 0.0)
    t0 = time.perf_counter()
    ch = puppet.character
    n_frames = sensors.positions.shape[0]
    sensors = _strided(puppet, sensors)
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
    w = np.zeros((n_frames, 4))  # eq. (15); a foot's points in union, 1 − Π (1 − w_k)
    for k, owner in enumerate(puppet.contact_owner):
        w[:, owner] = 1.0 - (1.0 - w[:, owner]) * (1.0 - imp.weights[:, k])
    goals = points.copy()
    goals[..., UP] += puppet.character_clearance - puppet.clearance
    # each foot under the character's own hip: moved along the floor by where that hip
    # is from the performer's (a wider pelvis stands wider; issue 40: a foot landing
    # from a kick was pulled 6 % of height inward as its importance rose)
    pos, _ = forward_kinematics(ch, captured_root, captured)
    feet = puppet.uppers[:2]
    hips = pos[:, feet] - sensors.positions[:, puppet.sensor_of[feet]]
    hips[..., UP] = 0.0
    goals[:, :2] += hips
    if len(puppet.contacts) > 4:  # feet: pivot on the toe as much as it is the planted point
        toe_w = imp.weights[:, 4:]
        share = toe_share(toe_w, imp.weights[:, :2])
        toe = sensors.positions[:, puppet.contacts[4:]] + hips
        toe_c = puppet.contact_clearance[4:] * puppet.foot_scale[:2]
        toe[..., UP] += toe_c - puppet.contact_clearance[4:]
        ankle_world = sensors.orientations[:, puppet.effectors[:2]]
        from_toe = toe - quat.rotate(ankle_world, puppet.toe_offsets)
        goals[:, :2] += share[..., None] * (from_toe - goals[:, :2])
    if puppet.lift != 1.0:  # each foot's lift at the legs' scale (leg_lift)
        k, low, high = lift_arguments(puppet)
        for i in range(2):
            mine = [s for s, d in zip(puppet.objects, puppet.influence[i], strict=True) if d > 0]
            if not mine:
                continue
            y = np.min([s.distance(goals[:, i]) for s in mine], axis=0)
            y -= puppet.character_clearance[i]
            goals[:, i, UP] += np.array([leg_lift(v, k, low, high) for v in y]) - y
    # (4b) the foot hold, and a planted foot's importance
    state = np.zeros(STATE_SIZE) if state is None else np.array(state, dtype=np.float64)
    if state.shape != (STATE_SIZE,):
        raise ValueError(f"Expected `state` of shape ({STATE_SIZE},), got {state.shape}")
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
        seen = np.ones((n_frames, 2), dtype=bool)
        if measured is not None:
            m = np.broadcast_to(np.asarray(measured, dtype=bool), sensors.positions.shape[:2])
            seen = m[:, puppet.effectors[:2]].copy()
            if len(puppet.contacts) > 4:
                seen &= m[:, puppet.contacts[4:]]
        hold = state[: 2 * HOLD_COLUMNS].reshape(2, HOLD_COLUMNS)  # a view: updated in place
        hold_feet(goals, feet, feet_v, feet_q, seen, *hold_arguments(puppet), hold, planted)
        w[:, :2] = 1.0 - (1.0 - w[:, :2]) * (1.0 - planted)
    t2 = time.perf_counter()
    seconds["importance"] += t2 - t1

    # (5) root position: the balls' importance and reach (a recursion), the paper's
    # estimate (vectorised), then the smooth root (a recursion)
    w_r, reach = np.empty((n_frames, 4)), np.empty((n_frames, 4))
    radius_weights(
        np.ascontiguousarray(w),
        np.ascontiguousarray(puppet.lengths, dtype=np.float64),
        lag_coefficient(puppet.smoothing.radius_release, puppet.fps),
        state,
        w_r,
        reach,
    )
    radii = np.full((n_frames, 4), np.inf)
    np.divide(reach, w_r, out=radii, where=w_r > 0.0)  # eq. (17), with the reach of w_r
    slack = puppet.smoothing.root_slack
    radii += slack * puppet.lengths  # where the root may go (module docstring)
    w[:, :2] = w_r[:, :2]  # a foot's importance falls through the lags for its limb too
    lowers = np.array([limb.lower for limb in puppet.limbs])
    uppers = puppet.uppers
    if puppet.root_estimation:
        est = estimate_root(captured_root, pos[:, lowers], goals, pos[:, uppers], reach, w_r)
        root = np.empty((n_frames, 3))
        smooth_root(
            captured_root,
            np.array(est.position),
            np.ascontiguousarray(goals + (captured_root[:, None] - pos[:, uppers])),
            radii,
            w_r,
            np.ascontiguousarray(
                (puppet.smoothing.root_zone + slack) * puppet.lengths, dtype=np.float64
            ),
            float(puppet.smoothing.root_stiffness),
            lag_coefficient(puppet.smoothing.root_smoothing, puppet.fps),
            state,
            root,
        )
    else:
        root = captured_root.copy()
    t3 = time.perf_counter()
    seconds["root"] += t3 - t2

    # (6) body posture, only where a goal is out of its ball
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
        band = PENETRATION_BAND * puppet.character_height if i < 2 else 0.0  # feet only
        clear = puppet.character_clearance[i]
        inside = np.flatnonzero(depth < clear)
        if not len(inside):
            continue
        want = clear + np.array([penetration_gap(y, band) for y in depth[inside] - clear])
        hit = _surface_hit(mine, pos[inside, limb.upper], effector[inside], want)
        sol = solve_limb(
            ch,
            limb,
            root[inside],
            rotations[inside],
            hit,
            swivel_mode="nearest",
            softness=0.0,  # hit lies on the segment to the effector: within the soft reach
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
        state=state,
        seconds=seconds,
    )


# -- the compiled frame's plan (retarget.online._kernels.puppetry) ---------------------------


@dataclass(frozen=True, eq=False)
class FramePlan:
    """A :class:`Puppet`'s fixed arrays, as the compiled frame
    (:func:`retarget.online._kernels.puppetry._frame`) takes them.

    Attributes
    ----------
    arguments : tuple
        ``_frame``'s arguments from ``performer_parents`` on, in its order (its
        docstring gives their shapes): read-only C arrays, scalars, and the tuples
        of them ``contact``, ``objects`` and ``limbs``.
    num_joints : int
        The character's ``J``.
    """

    arguments: tuple[object, ...]
    num_joints: int


def _frozen(a: object, dtype: type) -> NDArray[np.generic]:
    return frozen(a, dtype=dtype, order="C")  # type: ignore[arg-type]


def frame_plan(puppet: Puppet) -> FramePlan | None:
    """The :class:`FramePlan` of a puppet, or None when ``_frame`` cannot pose it.

    None for objects other than :class:`~retarget.environment.Floor`,
    :class:`~retarget.environment.Box` and :class:`~retarget.environment.Sphere`
    (exact types), a lower limb joint that is not free (three rotation
    channels, no limits), or one toe contact only.
    """
    ch = puppet.character
    shapes = shape_arrays(puppet.objects)
    toes = len(puppet.contacts) - 4
    if shapes is None or toes not in (0, 2):
        return None
    if not all(free_joint(ch, limb.lower) for limb in puppet.limbs):
        return None
    toe_clearance = puppet.contact_clearance[4:]
    toe_shift = toe_clearance * puppet.foot_scale[:toes] - toe_clearance
    geometry = [limb_geometry(ch, limb) for limb in puppet.limbs]
    f, i = np.float64, np.intp
    contact = (
        _frozen(puppet.contacts, i),
        _frozen(puppet.contact_owner, i),
        _frozen(puppet.contact_clearance, f),
        _frozen(puppet.influence[puppet.contact_owner], f),
        float(puppet.lookahead),
    )
    limbs = (
        _frozen([limb.joints for limb in puppet.limbs], i),
        _frozen([ch.parents[limb.upper] if limb.upper else -1 for limb in puppet.limbs], i),
        _frozen([g.a for g in geometry], f),
        _frozen([g.d1 for g in geometry], f),
        _frozen([g.off2 for g in geometry], f),
        _frozen([(g.h1, g.r1, g.l1, g.l2) for g in geometry], f),
        _frozen([(g.s, g.t) for g in geometry], f),
        _frozen([limb.hinge_limits for limb in puppet.limbs], f),
        _frozen([limb.swivel_reference for limb in puppet.limbs], f),
    )
    arguments = (
        _frozen(puppet.performer.parents, i),
        _frozen(puppet.sensor_of, i),
        _frozen(puppet.effectors, i),
        contact,
        _frozen(puppet.character_clearance - puppet.clearance, f),
        _frozen(toe_shift, f),
        _frozen(puppet.toe_offsets.reshape(toes, 3), f),
        tuple(_frozen(a, t) for a, t in zip(shapes, (i, f, f, f, f), strict=True)),
        _frozen(puppet.influence, f),
        _frozen(ch.point_parents, i),
        _frozen(ch.point_offsets[None], f),
        ch.num_joints,
        limbs,
        _frozen(puppet.lengths, f),
        _frozen(puppet.character_clearance, f),
        1e-9 * puppet.character_height,
        PENETRATION_BAND * puppet.character_height,
        bool(puppet.root_estimation),
        float(puppet.softness),
        bool(puppet.hold_feet),
        *hold_arguments(puppet),
        lag_coefficient(puppet.smoothing.radius_release, puppet.fps),
        lag_coefficient(puppet.smoothing.root_smoothing, puppet.fps),
        _frozen((puppet.smoothing.root_zone + puppet.smoothing.root_slack) * puppet.lengths, f),
        _frozen(puppet.smoothing.root_slack * puppet.lengths, f),
        float(puppet.smoothing.root_stiffness),
        float(puppet.stride),
        _frozen(puppet.origin, f),
        _frozen(lift_arguments(puppet), f),
    )
    return FramePlan(arguments, ch.num_joints)


def lift_arguments(puppet: Puppet) -> Array:
    """``(k, low, high)`` of :func:`~retarget.online._kernels.puppetry.leg_lift` for a
    puppet (length unit)."""
    low, high = LIFT_BAND
    h = puppet.character_height
    return np.array([puppet.lift, low * h, high * h])


def hold_arguments(
    puppet: Puppet,
) -> tuple[NDArray[np.generic], NDArray[np.generic], float, float, float]:
    """``arms``, ``gates``, ``pivot_eps``, ``decay`` and ``smooth`` of :func:`hold_feet`
    for a puppet."""
    arms = np.zeros((2, 3))
    arms[: len(puppet.toe_offsets)] = puppet.toe_offsets
    gates = np.concatenate([puppet.plant_gap, puppet.plant_speed])
    decay = math.exp(-1.0 / (puppet.release * puppet.fps)) if puppet.release > 0 else 0.0
    return (
        _frozen(arms, np.float64),
        _frozen(gates, np.float64),
        float(puppet.pivot_speed),
        decay,
        lag_coefficient(puppet.smoothing.plant_smoothing, puppet.fps),
    )


def _solve_compiled(
    plan: FramePlan, sensors: Array, measured: NDArray[np.bool_], state: Array
) -> PuppetFrames | None:
    """Stages 2-9 of one filtered frame in one compiled call, as :func:`solve_frames`
    gives them for that frame (:mod:`retarget.online._kernels.puppetry`).

    Parameters
    ----------
    plan : FramePlan
        The puppet's (:func:`frame_plan`).
    sensors : ndarray, shape (S, 13)
        The filtered frame as :class:`retarget.filters.SensorFilter` packs it
        (position, orientation, velocity, angular velocity), a writable C array.
    measured : ndarray of bool, shape (S,)
        Whether each sensor was measured at the frame (:func:`solve_frames`).
    state : ndarray, shape (STATE_SIZE,)
        The recursions' state after the previous frame (not changed).

    Returns
    -------
    PuppetFrames or None
        One frame (seconds all 0), or None when the frame needs the body
        posture or a sensor is not finite: then :func:`solve_frames` must pose it.
    """
    j = plan.num_joints
    out = {  # the PuppetFrames fields _frame writes, in its order
        "root_position": np.empty((1, 3)),
        "rotations": np.empty((1, j, 4)),
        "importance": np.empty((1, 4)),
        "goals": np.empty((1, 4, 3)),
        "captured_root": np.empty((1, 3)),
        "captured": np.empty((1, j, 4)),
        "residual": np.empty((1, 4)),
        "penetration_fixed": np.empty((1, 4), dtype=bool),
        "state": np.array(state, dtype=np.float64),
        "planted": np.empty((1, 2)),
    }
    if _frame(sensors, measured, tuple(out.values()), *plan.arguments) != SOLVED:
        return None
    iterations = np.zeros(1, dtype=np.int64)
    return PuppetFrames(**out, iterations=iterations, seconds=dict.fromkeys(STAGES, 0.0))


class Puppeteer:
    """The online object: one sensor frame in, one character pose out (causal): an
    :class:`~retarget.core.frames.OnlineMethod` of
    :class:`~retarget.core.frames.SensorFrame` in and
    :class:`~retarget.core.frames.PoseFrame` out (:meth:`reset`, :meth:`step`).
    What else a frame gives (importance, goals, iterations, stage times) is
    :attr:`last`, a one-frame :class:`PuppetFrames`.

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
    glitch_speed : float
        Degrees per second: a sensor's joint whose bones turn faster is a capture
        glitch, held ahead of the filter (:class:`retarget.filters.glitch.SensorGate`);
        0: none is.
    puppet : Puppet, optional
        The set-up itself, made beforehand (:func:`make_puppet`; the offline
        :func:`retarget.methods.puppetry.puppetry_retarget` measures it on the whole
        filtered take): kept on :meth:`reset`, nothing is calibrated; ``calibration``
        and ``options`` are then unused.
    **options
        Passed to :func:`make_puppet` (objects, influence, lookahead,
        root_estimation, alpha, beta, gamma, softness).

    Attributes
    ----------
    puppet : Puppet or None
        The set-up (None before the first frame unless given).
    last : PuppetFrames or None
        The last frame's stages (one frame).
    frames : int
        Frames stepped since the last :meth:`reset`.
    """

    def __init__(
        self,
        performer: Skeleton,
        character: Skeleton,
        *,
        fps: float,
        filter_parameters: KalmanParameters | None = None,
        calibration: Motion | None = None,
        puppet: Puppet | None = None,
        glitch_speed: float = math.degrees(MAX_SPEED),
        **options: object,
    ) -> None:
        self.performer = performer
        self.gate = SensorGate(performer, float(fps), math.radians(glitch_speed))
        self.character = character
        self.fps = float(fps)
        self._options: Mapping[str, object] = dict(options)
        self.calibration = calibration
        self._filter = SensorFilter(
            performer.num_joints,
            filter_parameters if filter_parameters is not None else KalmanParameters(),
            fps,
        )
        # a given set-up and its compiled frame's plan, kept on reset
        self._given = (puppet, None if puppet is None else frame_plan(puppet))
        self.puppet, self._plan = self._given
        self._state = np.zeros(STATE_SIZE)
        self._seen: list[NDArray[np.bool_]] = []  # the last lag + 1 frames' measured rows
        self.last: PuppetFrames | None = None
        self.frames = 0

    def reset(self) -> None:
        """Forget the past: the next frame re-initialises the filter and recalibrates (a
        set-up given as ``puppet`` is kept)."""
        self._filter.reset()
        self.gate.reset()
        self.puppet, self._plan = self._given
        self._state = np.zeros(STATE_SIZE)
        self._seen = []
        self.last = None
        self.frames = 0

    def _measured(self, positions: Array, orientations: Array) -> NDArray[np.bool_]:
        """Whether each sensor of the estimate the filter just gave was measured (S,):
        at that frame or, with a lag, at one of the frames that smooth it."""
        seen = np.isfinite(np.concatenate([positions, orientations], axis=1)).all(axis=1)
        self._seen = [*self._seen, seen][-(self._filter.parameters.lag + 1) :]
        return np.logical_or.reduce(self._seen)

    def step(self, frame: SensorFrame) -> PoseFrame:
        """Filter one sensor frame and pose the character.

        Parameters
        ----------
        frame : SensorFrame
            World sensor positions (S, 3) and orientations (S, 4), one per performer
            joint (NaN rows: sensor lost).

        Returns
        -------
        PoseFrame
            The character's root position (3,) and local rotations (J, 4).
            :attr:`last` holds the frame's importance, goals, iterations and stage
            times (stages 2-9 of the compiled path timed as one, under
            ``"captured"``: :class:`PuppetFrames`).
        """
        if not isinstance(frame, SensorFrame):
            raise TypeError(f"Expected a SensorFrame, got {type(frame).__name__}")
        t0 = time.perf_counter()
        positions, orientations = self.gate.step(frame.positions, frame.orientations)
        sensors = self._filter.update_packed(positions, orientations)
        measured = self._measured(positions, orientations)
        t1 = time.perf_counter()
        if self.puppet is None:
            if self.calibration is not None:
                take = self.calibration
                cal = take.rotations
                cal_pos = forward_kinematics(take.skeleton, take.root_position, take.rotations)[0]
                cal_pos = cal_pos[:, : take.skeleton.num_joints]
            else:
                cal, cal_pos = local_rotations(self.performer, sensors[:, 3:7]), None
            options = dict(self._options)
            if cal_pos is None:  # the scaling's origin: the first frame's root
                options.setdefault("origin", sensors[0, :3].copy())
            self.puppet = make_puppet(
                self.performer,
                self.character,
                cal,
                fps=self.fps,
                calibration_positions=cal_pos,
                **options,  # type: ignore[arg-type]
            )
            self._plan = frame_plan(self.puppet)
        t2 = time.perf_counter()
        plan = self._plan
        out = None if plan is None else _solve_compiled(plan, sensors, measured, self._state)
        t3 = time.perf_counter()
        if out is None:
            est = SensorEstimate(
                sensors[None, :, 0:3],
                sensors[None, :, 3:7],
                sensors[None, :, 7:10],
                sensors[None, :, 10:13],
            )
            out = solve_frames(self.puppet, est, self._state, measured[None])
        self._state = out.state
        out.seconds["captured"] += t3 - t2
        out.seconds["filter"] += t1 - t0
        self.last = out
        self.frames += 1
        return PoseFrame(out.root_position[0], out.rotations[0])
