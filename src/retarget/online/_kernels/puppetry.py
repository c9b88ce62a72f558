"""The compiled frame of computer puppetry: stages 2-9 of one sensor frame in one call.

:meth:`retarget.online.puppetry.Puppeteer.step` poses the character one frame
at a time, and :func:`retarget.online.puppetry.solve_frames`, vectorised over
frames, does that with arrays of one frame: four limb solves, forward
kinematics, importance and the root search each pay numpy's overhead per call
(≈0.5 ms per :func:`retarget.ik.limb.solve_limb` on one element) on work of a
few dozen flops, so the frame took ≈1.6 ms, nearly all overhead. This module
is that frame hand-written with numba on scalars and 3- or 4-tuples (one
compiled call, ``_frame``), the same formulas in the same order as the numpy
functions it stands for; ``tests/test_puppetry.py`` checks it against
:func:`~retarget.online.puppetry.solve_frames` on real data (equal to ~1e-15).
A step now takes ≈20-30 µs on the lafan characters (≈33 000-50 000 frames/s,
``benchmarks/puppetry.py``): ``_frame`` ≈6.5 µs (the four limbs with their
blends ≈2.4, importance and goals ≈0.7, the ball search ≈0.35, the lags and the
soft closest point of the root ≈1, each of the three forward kinematics ≈0.2),
its call from Python ≈4 µs more (≈50 arguments), the filter ≈6.5 µs, and the
output arrays.

The stages (Shin et al. 2001; module :mod:`retarget.online.puppetry`, which
also says where and why the extensions leave the paper) and where each is done:

* 2, captured posture ``q_j = Q_parent⁻¹ Q_j`` (``_captured``);
* 3, importance, eqs. 11-15 with the toe contacts in union (``_importance``;
  the shapes' distances and normals by :mod:`retarget.environment._kernels.shapes`);
* 4, goals with the clearance offsets and the toe pivot (``_goals``);
* 4b, the foot hold with its lagged plant weights (``hold_feet``: the one
  implementation, which :func:`~retarget.online.puppetry.solve_frames` calls
  over all its frames);
* 5, root position: the balls' lagged importance (``radius_weights``), eqs.
  16-17 and the Appendix (``_estimate_root``: eq. 16 here, the ball search is
  :func:`retarget.ik._kernels.root.closest_in_balls_frame`), then the lags and the
  soft closest point (``smooth_root``, ``_soft_closest``); ``radius_weights``
  and ``smooth_root`` are the one implementation too, looping over however
  many frames they are given;
* 6, the posture check only: a goal still out of its ball ``l_i / w_i``
  needs the body-posture conjugate gradient (eqs. 18-20), which is not
  compiled: ``_frame`` then stops and the caller runs ``solve_frames``;
* 7, the analytic limbs of Lee & Shin 1999 eq. 7 with the soft reach and the
  swivel nearest the captured upper joint, Shin et al. eqs. 21-23
  (``_solve_limb``, on the steps of :mod:`retarget.ik._kernels.limb`);
* 8, the blend of eq. 24, ``slerp(q*, q_ik, w_i)`` (``_slerp``);
* 9, the penetration fix (``_surface_hit``, then ``_solve_limb`` again).

This module knows arrays and scalars only, and imports nothing of
:mod:`retarget.online.puppetry`: the fixed arrays of a
:class:`~retarget.online.puppetry.Puppet` are gathered there, once, into a
:class:`~retarget.online.puppetry.FramePlan`
(:func:`~retarget.online.puppetry.frame_plan`). Floors, boxes and spheres are
compiled (the shapes of :mod:`retarget.environment._kernels.shapes`); a puppet
with another shape (height field, scene), with a wrist or ankle that is not a
free 3-DOF joint (its orientation would need
:func:`retarget.core.dofs.clamp_to_limits`) or with one toe only gets no plan and
stays on ``solve_frames``.

Units: lengths in the skeletons' unit (the performer's and the character's
are the same unit), angles in radians, quaternions ``(w, x, y, z)``, Y up
(:data:`retarget.humanoid.contacts.UP`, the axis of the floors' heights).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...core._kernels.kinematics import _fk_kernel
from ...core._kernels.quat import _wxyz_from_rotvec
from ...core._kernels.quat4 import conj as _conj
from ...core._kernels.quat4 import multiply as _qmul
from ...core._kernels.quat4 import ominus as _ominus
from ...core._kernels.quat4 import rotate as _rotate
from ...core._kernels.quat4 import row as _qrow
from ...core._kernels.vec3 import add as _add
from ...core._kernels.vec3 import cross as _cross
from ...core._kernels.vec3 import dot as _dot
from ...core._kernels.vec3 import norm as _norm
from ...core._kernels.vec3 import row as _vrow
from ...core._kernels.vec3 import scale as _scale
from ...core._kernels.vec3 import sub as _sub
from ...environment._kernels.shapes import point_closest, point_distance
from ...ik._kernels.limb import axis_quat as _axis_quat
from ...ik._kernels.limb import between as _between
from ...ik._kernels.limb import solve_hinge as _solve_hinge
from ...ik._kernels.limb import unit as _unit
from ...ik._kernels.limb import wrap as _wrap
from ...ik._kernels.root import closest_in_balls_frame

__all__ = [
    "HOLD_COLUMNS",
    "NEEDS_POSTURE",
    "NOT_FINITE",
    "SOLVED",
    "STATE_SIZE",
    "hold_feet",
    "lag_coefficient",
    "radius_weights",
    "smooth_root",
]

# what _frame returns
SOLVED, NEEDS_POSTURE, NOT_FINITE = 0, 1, 2


# -- quaternions and vectors as tuples (beyond ._quat4 and .._vec3) ---------------------------


@numba.njit(cache=True, nogil=True)
def _slerp(a, b, t):  # pragma: no cover - jitted
    """Eq. 24: ``a ⊗ exp(t · log(a⁻¹ ⊗ b))`` (:func:`retarget.core.quat.slerp`)."""
    v = _ominus(b, a)
    e = _wxyz_from_rotvec(t * v[0], t * v[1], t * v[2])
    return _qmul(a, e)


@numba.njit(cache=True, nogil=True)
def _stride(sensors, stride, origin):  # pragma: no cover - jitted
    """A copy of ``sensors`` (S, 13) with the horizontal positions (x, z) about
    ``origin`` (3,) and the horizontal velocities times ``stride``
    (``puppetry._strided``)."""
    out = sensors.copy()
    for s in range(sensors.shape[0]):
        for c in (0, 2):
            out[s, c] = origin[c] + stride * (sensors[s, c] - origin[c])
            out[s, 7 + c] = stride * sensors[s, 7 + c]
    return out


@numba.njit(cache=True, nogil=True)
def _captured(
    sensors, performer_parents, sensor_of, captured, captured_root
):  # pragma: no cover - jitted
    """Stage 2: ``captured`` (1, J, 4) ← ``Q_parent⁻¹ Q_j`` of the performer joints
    ``sensor_of`` (J,); ``captured_root`` (1, 3) ← the root sensor's position.

    ``sensors`` (S, 13): position, orientation, velocity, angular velocity per sensor.
    """
    for j in range(sensor_of.shape[0]):
        s = sensor_of[j]
        q = (sensors[s, 3], sensors[s, 4], sensors[s, 5], sensors[s, 6])
        a = performer_parents[s]
        if a >= 0:
            q = _qmul((sensors[a, 3], -sensors[a, 4], -sensors[a, 5], -sensors[a, 6]), q)
        for c in range(4):
            captured[0, j, c] = q[c]
    for c in range(3):
        captured_root[0, c] = sensors[0, c]


@numba.njit(cache=True, nogil=True)
def _importance(sensors, contact, objects, weights, gaps, importance):  # pragma: no cover - jitted
    """Stage 3, eqs. 11-15, with :func:`retarget.online.importance.end_effector_importance`'s
    rules: per contact point ``k`` (P,) and object ``j``, ``d = distance − c_k``,
    ``d⁺ = d + λ n·ṗ`` (eq. 12), ``p(d⁺ / D_kj)`` (eqs. 13-14; 0 where ``D_kj = 0``),
    the max over the objects (eq. 15) into ``weights`` (P,), and each end-effector's
    union over its points (the ankle and its toe), ``1 − Π_k (1 − w_k)``, into
    ``importance`` (1, 4) (a hand has one point: its weight).

    ``contact`` is ``(contacts, contact_owner, contact_clearance, contact_influence,
    lookahead)`` as :func:`_frame` takes them: ``contact_influence`` (P, m) is ``D`` of
    each point's end-effector, ``λ`` in seconds; ``objects`` the shapes
    ``(kind, center, half, frame, size)`` (:mod:`retarget.environment._kernels.shapes`).
    ``gaps`` (P,) gets each point's ``d`` to the nearest object it interacts with
    (``D_kj > 0``; inf when none), the gap of stage 4b.
    """
    contacts, contact_owner, contact_clearance, contact_influence, lookahead = contact
    kind, center, half, frame, size = objects
    for i in range(4):
        importance[0, i] = 0.0
    for k in range(contacts.shape[0]):
        s = contacts[k]
        p = (sensors[s, 0], sensors[s, 1], sensors[s, 2])
        v = (sensors[s, 7], sensors[s, 8], sensors[s, 9])
        best = -1.0
        gaps[k] = np.inf
        for j in range(kind.shape[0]):
            dist, _, normal = point_closest(kind, center, half, frame, size, j, p)
            predicted = dist - contact_clearance[k] + lookahead * _dot(normal, v)
            big_d = contact_influence[k, j]
            if big_d > 0.0:
                gaps[k] = min(gaps[k], dist - contact_clearance[k])
            d = predicted / big_d if big_d > 0.0 else 1.0
            d = min(max(d, 0.0), 1.0)
            pair = (2.0 * d - 3.0) * d * d + 1.0
            if pair > best:
                best = pair
        weights[k] = max(best, 0.0)  # 0 without objects
        i = contact_owner[k]
        # the union over the end-effector's points, 1 − Π (1 − w_k) (module docstring)
        importance[0, i] = 1.0 - (1.0 - importance[0, i]) * (1.0 - weights[k])


@numba.njit(cache=True, nogil=True)
def _goals(
    sensors,
    effectors,
    contacts,
    goal_shift,
    toe_shift,
    toe_offsets,
    weights,
    goals,
    hips,
):  # pragma: no cover - jitted
    """Stage 4: ``goals`` (1, 4, 3) ← the performer's ankles and wrists, raised by
    ``goal_shift`` (4,) (character's less performer's clearance), each foot's moved
    along the floor by ``hips`` (2, 3): where the character's hip is from the
    performer's (its foot under its own hip: ``puppetry.solve_frames``' stage 4); each
    foot's goal
    then moves toward the ankle position that puts the character's toe (``toe_offsets``
    (T, 3) in the ankle frame) on the performer's, raised by ``toe_shift`` (T,), by the
    toe's share ``w_toe / max(w_toe + w_ankle, 1)`` (T = 0 or 2:
    :func:`retarget.online.puppetry.toe_share`).
    """
    for i in range(4):
        s = effectors[i]
        for c in range(3):
            goals[0, i, c] = sensors[s, c]
        goals[0, i, 1] += goal_shift[i]
        if i < 2:
            goals[0, i, 0] += hips[i, 0]
            goals[0, i, 2] += hips[i, 2]
    for k in range(toe_shift.shape[0]):
        toe_w = weights[4 + k]
        share = toe_w / max(toe_w + weights[k], 1.0)
        s = contacts[4 + k]
        toe = (sensors[s, 0] + hips[k, 0], sensors[s, 1] + toe_shift[k], sensors[s, 2] + hips[k, 2])
        a = effectors[k]
        ankle = (sensors[a, 3], sensors[a, 4], sensors[a, 5], sensors[a, 6])
        from_toe = _sub(toe, _rotate(ankle, _vrow(toe_offsets, k)))
        for c in range(3):
            goals[0, k, c] += share * (from_toe[c] - goals[0, k, c])


@numba.njit(cache=True, nogil=True)
def _fall(x, lo, hi):  # pragma: no cover - jitted
    """1 up to ``lo``, 0 from ``hi`` on (and for NaN), between them the C2 ramp
    ``1 − t³ (10 − 15 t + 6 t²)`` (zero first and second derivatives at both ends)."""
    if x <= lo:
        return 1.0
    if not x < hi:
        return 0.0
    t = (x - lo) / (hi - lo)
    return 1.0 - t * t * t * (10.0 + t * (6.0 * t - 15.0))


@numba.njit(cache=True, nogil=True)
def _lag3(state, k, x, alpha):  # pragma: no cover - jitted
    """Three first-order lags in a row, ``y_j ← y_j + α (y_{j−1} − y_j)`` with ``y_0 = x``,
    on ``state[k : k + 3]`` (updated); returns the last. Each stage is a convex
    combination, so the output stays within the input's range (a weight in [0, 1]
    stays in it, without overshoot), and a step of the input comes out as a ramp
    whose third difference is at most ``α³ max(1, |3α − 1|)`` times the step."""
    state[k] += alpha * (x - state[k])
    state[k + 1] += alpha * (state[k] - state[k + 1])
    state[k + 2] += alpha * (state[k + 1] - state[k + 2])
    return state[k + 2]


@numba.njit(cache=True, nogil=True)
def _hold_step(row, raw, lifted, u, q, gx, gz, arm, decay, smooth):  # pragma: no cover - jitted
    """One frame of the foot hold for one foot: ``row`` (the foot's first
    ``_HOLD_STEP`` state columns, updated) with the frame's plant evidence ``raw``,
    ``lifted``, pivot ``u``, orientation ``q`` and tracked goal ``(gx, gz)``.
    Returns the plant weight ``s`` and the offset ``(ox, oz)`` added to the goal."""
    if row[4] == 0.0:  # no past: the weight ramps in from 0 (not planted)
        row[10], row[11], row[12] = 0.0, 0.0, 0.0
    s = _lag3(row, 10, raw, smooth)
    ox, oz = 0.0, 0.0
    if row[4] != 0.0:
        last = (row[5], row[6], row[7], row[8])
        rel = _scale(_rotate(last, arm), -row[9])  # ankle - pivot
        roll = _sub(_rotate(_qmul(q, _conj(last)), rel), rel)
        hold = decay**lifted
        ox = s * (row[0] - (gx - row[2]) + roll[0]) + (1 - s) * hold * row[0]
        oz = s * (row[1] - (gz - row[3]) + roll[2]) + (1 - s) * hold * row[1]
    row[0], row[1], row[2], row[3] = ox, oz, gx, gz
    row[4] = 1.0
    for c in range(4):
        row[5 + c] = q[c]
    row[9] = u
    return s, ox, oz


@numba.njit(cache=True, nogil=True)
def _replay_gap(
    row, n, raw, lifted, spin, u, q, gx, gz, arm, pivot_eps, decay, smooth
):  # pragma: no cover - jitted
    """The foot hold's ``n`` predicted frames held again from the last measured frame
    (its state, kept in ``row``) to this one (``raw``, ``lifted``, ``spin = |v_toe −
    v_ankle|²``, pivot ``u``, ``q``, goal ``(gx, gz)``): the plant evidence linear between the two;
    the goal and orientation moving in shares ``∝ 1 − evidence`` (a foot moves while
    the less planted: a landing's step comes early in the gap, a push-off's late; even
    shares when planted throughout); every roll about one pivot, the two frames' mean
    weighted by their spin (a foot that rose onto its toes unseen turned about its toe
    all the way). ``row`` ends at the state after the last predicted frame."""
    for c in range(_HOLD_STEP):
        row[c] = row[_HOLD_STEP + c]
    raw0, lifted0, spin0 = row[_HOLD_RAW], row[_HOLD_RAW + 1], row[_HOLD_RAW + 2]
    g0x, g0z, u0 = row[2], row[3], row[9]
    q0 = (row[5], row[6], row[7], row[8])
    pivot = (spin0 * u0 + spin * u) / (spin0 + spin + pivot_eps * pivot_eps)
    if not spin0 + spin > 0.0:
        pivot = u0
    row[9] = pivot
    sign = 1.0 if q0[0] * q[0] + q0[1] * q[1] + q0[2] * q[2] + q0[3] * q[3] >= 0.0 else -1.0
    total = 0.0
    for j in range(1, n + 2):
        total += 1.0 - (raw0 + j / (n + 1.0) * (raw - raw0))
    moved = 0.0
    for j in range(1, n + 1):
        t = j / (n + 1.0)
        e = raw0 + t * (raw - raw0)
        moved = moved + (1.0 - e) / total if total > 1e-9 else t
        qa = (
            q0[0] + moved * (sign * q[0] - q0[0]),
            q0[1] + moved * (sign * q[1] - q0[1]),
            q0[2] + moved * (sign * q[2] - q0[2]),
            q0[3] + moved * (sign * q[3] - q0[3]),
        )
        r = math.sqrt(qa[0] * qa[0] + qa[1] * qa[1] + qa[2] * qa[2] + qa[3] * qa[3])
        qa = (qa[0] / r, qa[1] / r, qa[2] / r, qa[3] / r)
        gxa, gza = g0x + moved * (gx - g0x), g0z + moved * (gz - g0z)
        le = lifted0 + t * (lifted - lifted0)
        _hold_step(row, e, le, pivot, qa, gxa, gza, arm, decay, smooth)


@numba.njit(cache=True, nogil=True)
def hold_feet(
    goals,
    gaps,
    velocities,
    orientations,
    measured,
    arms,
    gates,
    pivot_eps,
    decay,
    smooth,
    state,
    planted,
):  # pragma: no cover - jitted
    """Stage 4b, the foot hold (:mod:`retarget.online.puppetry`), over ``F`` frames in order.

    Where a foot's sensors were not measured (the filter predicted them: a gap in
    a stream, a sensor lost) the hold goes on with the prediction, which is close
    over a frame or two. At the first measured frame after, the hold's state is
    taken back to the last measured frame's and the frames between are held
    again from the two measured frames: the foot went from the one's goal and
    orientation to the other's while it was the less planted of the two (a
    landing: the step first, then still; a push-off: still, then the step at
    the frame), about the pivot of now. A hold integrates while a foot is
    planted, so a difference left at a gap stays for the whole plant (seconds
    when the performer stands); going on from the prediction's state left the
    stream up to 0.85 % of height from the gap-free one for seconds at 120 Hz
    (docs/architecture.md, "Gaps").

    Parameters
    ----------
    goals : (F, 4, 3)
        Stage 4's goals; the feet's (rows 0 and 1) are moved horizontally in place.
    gaps : (F, 2, 2)
        Height of each foot's ankle and toe above its clearance over the nearest
        ground (inf: no toe, or no ground), performer's unit.
    velocities : (F, 2, 2, 3)
        The performer's filtered velocities of those points (unit/s; zero: no toe).
    orientations : (F, 2, 4)
        The performer's ankle orientations, the character's foot orientations.
    measured : (F, 2) bool
        Whether each foot's sensors (ankle and toe) were measured at the frame.
    arms : (2, 3)
        The character's toe joints in their ankles' frames (zero: no toe).
    gates : (4,)
        Gap at which a point starts to leave the ground and has left it, then
        the horizontal speeds (unit/s) of the same.
    pivot_eps : float
        Speed (unit/s) that regularises the pivot.
    decay : float
        ``κ``: the share of the hold's offset left after one frame of flight.
    smooth : float
        ``α`` of the plant weight's three lags (:func:`_lag3`; 1: none).
    state : (2, HOLD_COLUMNS)
        Per foot: offset (x, z), last tracked goal (x, z), started (0 or 1), last
        orientation (4), last pivot ``u``, the plant weight's three lags; then
        those 13 as they were at the last measured frame, that frame's plant
        evidence (raw, lifted) and spin, and the number of frames predicted since.
        Updated in place; zeros: no past.
    planted : (F, 2)
        Written: each foot's plant weight ``s``.
    """
    for f in range(goals.shape[0]):
        for i in range(2):
            raw = 0.0
            lifted = 1.0
            for k in range(2):
                on = _fall(gaps[f, i, k], gates[0], gates[1])
                vx, vz = velocities[f, i, k, 0], velocities[f, i, k, 2]
                raw = max(raw, on * _fall(math.sqrt(vx * vx + vz * vz), gates[2], gates[3]))
                lifted = min(lifted, 1.0 - on)
            va = _vrow(velocities[f, i], 0)
            dv = _sub(_vrow(velocities[f, i], 1), va)
            u = min(max(-_dot(va, dv) / (_dot(dv, dv) + pivot_eps * pivot_eps), 0.0), 1.0)
            q = _qrow(orientations[f], i)
            gx, gz = goals[f, i, 0], goals[f, i, 2]
            row = state[i]
            if not (math.isfinite(gx + gz + u) and math.isfinite(q[0] + q[1] + q[2] + q[3])):
                row[4] = 0.0  # a lost sensor: start again when it is back
                row[_HOLD_STEP + 4] = 0.0
                row[_HOLD_MISSED] = 0.0
                planted[f, i] = 0.0
                continue
            arm = _vrow(arms, i)
            missed = row[_HOLD_MISSED]
            if measured[f, i] and missed > 0.0 and row[_HOLD_STEP + 4] != 0.0:
                spin = _dot(dv, dv)
                _replay_gap(
                    row, int(missed), raw, lifted, spin, u, q, gx, gz, arm, pivot_eps, decay, smooth
                )
            s, ox, oz = _hold_step(row, raw, lifted, u, q, gx, gz, arm, decay, smooth)
            planted[f, i] = s
            goals[f, i, 0] = gx + ox
            goals[f, i, 2] = gz + oz
            if measured[f, i]:
                for c in range(_HOLD_STEP):
                    row[_HOLD_STEP + c] = row[c]
                row[_HOLD_RAW], row[_HOLD_RAW + 1], row[_HOLD_RAW + 2] = raw, lifted, _dot(dv, dv)
                row[_HOLD_MISSED] = 0.0
            else:
                row[_HOLD_MISSED] = missed + 1.0


@numba.njit(cache=True, nogil=True)
def _estimate_root(
    captured_root,
    pos,
    limb_joints,
    goals,
    reach,
    importance,
    root,
):  # pragma: no cover - jitted
    """Stage 5's ball search, eqs. 16-17 (:func:`retarget.ik.root.estimate_root`): the
    weighted offset of eq. 16, then the point of the balls ``|x − (g_i + root − upper_i)| ≤
    reach_i / w_i`` closest to the offset root (Appendix; ``closest_in_balls_frame``), into
    ``root`` (1, 3). ``pos`` (1, P, 3) is the character with the captured angles;
    ``reach`` (4,) and ``importance`` (4,) are those of :func:`radius_weights`."""
    n = limb_joints.shape[0]
    numerator = (0.0, 0.0, 0.0)
    total = 0.0
    centers = np.empty((n, 3))
    radii = np.empty(n)
    for i in range(n):
        w = importance[i]
        g = (goals[0, i, 0], goals[0, i, 1], goals[0, i, 2])
        e = _vrow(pos[0], limb_joints[i, 2])
        numerator = _add(numerator, _scale(_sub(g, e), w))
        total += w
        from_upper = _sub(_vrow(captured_root, 0), _vrow(pos[0], limb_joints[i, 0]))
        centers[i, 0], centers[i, 1], centers[i, 2] = _add(g, from_upper)
        radii[i] = reach[i] / w if w > 0.0 else np.inf
    if not total > 0.0:
        total = 1.0
    p = _add(
        _vrow(captured_root, 0), (numerator[0] / total, numerator[1] / total, numerator[2] / total)
    )
    kept = np.empty(n, np.bool_)
    closest_in_balls_frame(p, centers, radii, importance, np.empty((n, 3)), root[0], kept)


# -- the smooth root (stage 5, beyond the paper) -------------------------------------------

# the foot hold's state per foot (:func:`hold_feet`): one frame's (:func:`_hold_step`),
# the same at the last measured frame, that frame's plant evidence, frames predicted since
_HOLD_STEP = 13
_HOLD_RAW = 2 * _HOLD_STEP
_HOLD_MISSED = _HOLD_RAW + 3  # after the evidence raw, lifted and the spin
#: columns of the foot hold's state per foot (:func:`hold_feet`)
HOLD_COLUMNS = _HOLD_MISSED + 1
# the rest of the recursion's state (PuppetFrames.state), after the hold's 2 x HOLD_COLUMNS:
_W_LAGS = 2 * HOLD_COLUMNS  # the radius weights' three lags per limb (4 x 3), then a flag
_W_STARTED = _W_LAGS + 12
_ROOT_LAGS = _W_STARTED + 1  # the root offset's three lags per axis (3 x 3), then a flag
_ROOT_STARTED = _ROOT_LAGS + 9
#: length of the flat state of the recursion over frames (PuppetFrames.state)
STATE_SIZE = _ROOT_STARTED + 1


@numba.njit(cache=True, nogil=True)
def radius_weights(importance, lengths, alpha, state, weights, reach):  # pragma: no cover
    """The importance that sizes the reach balls (stage 5; module docstring of
    :mod:`retarget.online.puppetry`), over ``F`` frames in order.

    ``w_r = max(w, lag(w))`` for the hands, ``lag`` three first-order lags of ``α``
    (:func:`_lag3`): a rising importance shrinks a ball at once, a falling one lets it
    grow only as fast as the lags release it. For the feet ``w_r = lag(w)``, rising
    too: a foot coming down fast from a kick raised its importance from 0.07 to 0.77
    in two frames, and its limb turned from the captured posture to its goal in them
    (issue 40: a knee step of 3 % of height on sally); a landing foot is held by the
    foot hold (stage 4b), whose own lags engage it. The radius is
    ``l (1 − w_r + w_r²) / w_r``: ``l`` at ``w_r = 1`` with zero slope there, ``+∞`` at
    ``w_r = 0`` as eq. 17's ``l / w``.

    Parameters
    ----------
    importance : (F, 4)
    lengths : (4,)
        ``l_i``.
    alpha : float
        1: no lag (``w_r = w``).
    state : (STATE_SIZE,)
        The recursion's state (its radius-weight part is used and updated).
    weights, reach : (F, 4)
        Written: ``w_r``, and ``l (1 − w_r + w_r²)`` (the radius is ``reach / w_r``).
    """
    for f in range(importance.shape[0]):
        fresh = state[_W_STARTED] == 0.0
        for i in range(4):
            w = importance[f, i]
            if not math.isfinite(w):
                w = 0.0
            if fresh:
                for k in range(3):
                    state[_W_LAGS + 3 * i + k] = w
            lagged = _lag3(state, _W_LAGS + 3 * i, w, alpha)
            wr = lagged if i < 2 else max(w, lagged)
            weights[f, i] = wr
            reach[f, i] = lengths[i] * (1.0 - wr + wr * wr)
        state[_W_STARTED] = 1.0


@numba.njit(cache=True, nogil=True)
def _push(e):  # pragma: no cover - jitted
    """Shape of a soft ball's push at depth ``e`` into its zone, its slope and its
    integral: 0 up to ``e = 0``; ``e⁴ (5/2 − 3e + e²)`` on [0, 1], whose slope is the
    C2 ramp ``e³ (10 − 15e + 6e²)`` from 0 to 1 (the push starts with zero first,
    second and third derivatives); then ``e − 1/2`` (slope 1)."""
    if e <= 0.0:
        return 0.0, 0.0, 0.0
    if e < 1.0:
        e2 = e * e
        e3 = e2 * e
        return (
            e3 * e * (2.5 - 3.0 * e + e2),
            e3 * (10.0 - 15.0 * e + 6.0 * e2),
            e3 * e2 * (0.5 - 0.5 * e + e2 / 7.0),
        )
    return e - 0.5, 1.0, 1.0 / 7.0 + 0.5 * e * (e - 1.0)


@numba.njit(cache=True, nogil=True)
def _soft_terms(x, anchor, centers, radii, zone, stiffness, hessian):  # pragma: no cover
    """Energy and gradient of the soft closest point at ``x`` (3-tuples), its Hessian
    into ``hessian`` (3, 3) (:func:`_soft_closest`)."""
    g = _sub(x, anchor)
    energy = 0.5 * _dot(g, g)
    for a in range(3):
        for b in range(3):
            hessian[a, b] = 1.0 if a == b else 0.0
    for i in range(radii.shape[0]):
        if not (radii[i] < np.inf and zone[i] > 0.0):
            continue
        v = _sub(x, _vrow(centers, i))
        dist = _norm(v)
        if not dist > 0.0:
            continue
        e = (dist - radii[i] + zone[i]) / zone[i]
        force, slope, integral = _push(e)
        if e <= 0.0:
            continue
        k = stiffness * zone[i]
        energy += k * zone[i] * integral
        n = _scale(v, 1.0 / dist)
        g = _add(g, _scale(n, k * force))
        bend = k * force / dist
        for a in range(3):
            for b in range(3):
                hessian[a, b] += (stiffness * slope - bend) * n[a] * n[b]
            hessian[a, a] += bend
    return energy, g


@numba.njit(cache=True, nogil=True)
def _solve3(m, r):  # pragma: no cover - jitted
    """``m⁻¹ r`` for a symmetric positive definite (3, 3) ``m`` (Cramer's rule)."""
    c00 = m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]
    c01 = m[1, 2] * m[2, 0] - m[1, 0] * m[2, 2]
    c02 = m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]
    det = m[0, 0] * c00 + m[0, 1] * c01 + m[0, 2] * c02
    c11 = m[0, 0] * m[2, 2] - m[0, 2] * m[2, 0]
    c12 = m[0, 1] * m[2, 0] - m[0, 0] * m[2, 1]
    c22 = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
    return (
        (c00 * r[0] + c01 * r[1] + c02 * r[2]) / det,
        (c01 * r[0] + c11 * r[1] + c12 * r[2]) / det,
        (c02 * r[0] + c12 * r[1] + c22 * r[2]) / det,
    )


@numba.njit(cache=True, nogil=True)
def _soft_closest(anchor, centers, radii, zone, stiffness):  # pragma: no cover - jitted
    """The closest point to ``anchor`` of the balls' smoothed intersection: the minimum
    of ``½|x − a|² + Σ_i k_i ζ_i Π((|x − c_i| − r_i + ζ_i) / ζ_i)``, ``k_i = K ζ_i``,
    ``Π`` the integral of :func:`_push`: inside ``r_i − ζ_i`` a ball does not act, in
    the zone ``[r_i − ζ_i, r_i]`` it pushes ``x`` inward with a force that rises from 0
    with zero first three derivatives. The energy is strictly convex and C3, so the
    minimum moves C2 with ``a``, the centres and the radii (where the paper's closest
    point jumps in velocity as the active set of balls changes). Newton's method with
    backtracking, from ``a``; 3-tuples, length unit.
    """
    x = anchor
    hessian = np.empty((3, 3))
    scratch = np.empty((3, 3))
    scale = 1.0 + _norm(anchor)
    energy, g = _soft_terms(x, anchor, centers, radii, zone, stiffness, hessian)
    for _ in range(60):
        if _norm(g) <= 1e-13 * scale:
            break
        step = _solve3(hessian, g)
        slope = _dot(g, step)
        # backtrack until the energy falls enough, or (near the minimum, where the
        # energy's rounding hides its fall) the gradient halves
        t = 1.0
        for _ in range(40):
            y = _sub(x, _scale(step, t))
            trial, gy = _soft_terms(y, anchor, centers, radii, zone, stiffness, scratch)
            if trial <= energy - 1e-4 * t * slope or _norm(gy) <= 0.5 * _norm(g):
                break
            t *= 0.5
        x = y
        energy, g = trial, gy
        hessian[:, :] = scratch
        if t * _norm(step) <= 1e-15 * scale:
            break
    return x


@numba.njit(cache=True, nogil=True)
def smooth_root(
    captured_root, estimate, centers, radii, weights, zone, stiffness, alpha, state, root
):  # pragma: no cover - jitted
    """The root of stage 5, C2 in time, over ``F`` frames in order (module docstring of
    :mod:`retarget.online.puppetry`).

    Per frame: the paper's estimate less the captured root, through three first-order
    lags (:func:`_lag3`, ``α``; the first frame starts them at its value), added back
    to the captured root: the anchor ``a``; then the soft closest point of the balls
    to ``a`` (:func:`_soft_closest`); a point still outside a ball (a pull the zone
    cannot hold) goes to the closest point of the balls (``closest_in_balls_frame``), so the
    goals stay as reachable as the paper's estimate makes them.

    Parameters
    ----------
    captured_root, estimate : (F, 3)
        The captured root position and the paper's root estimate.
    centers : (F, n, 3)
        The balls' centres ``g_i + root − upper_i``.
    radii, weights : (F, n)
        Their radii (``inf``: none) and the importance that sized them.
    zone : (n,)
        ``ζ_i``, the depth of each ball's soft zone (0: none).
    stiffness : float
        ``K``.
    alpha : float
        1: no lag.
    state : (STATE_SIZE,)
        The recursion's state (its root part is used and updated).
    root : (F, 3)
        Written.
    """
    n = radii.shape[1]
    proj = np.empty((n, 3))
    kept = np.empty(n, np.bool_)
    out = np.empty(3)
    for f in range(captured_root.shape[0]):
        cr = _vrow(captured_root, f)
        offset = _sub(_vrow(estimate, f), cr)
        if not math.isfinite(offset[0] + offset[1] + offset[2]):
            state[_ROOT_STARTED] = 0.0
            for c in range(3):
                root[f, c] = estimate[f, c]
            continue
        if state[_ROOT_STARTED] == 0.0:
            for c in range(3):
                for k in range(3):
                    state[_ROOT_LAGS + 3 * c + k] = offset[c]
            state[_ROOT_STARTED] = 1.0
        lagged = (
            _lag3(state, _ROOT_LAGS, offset[0], alpha),
            _lag3(state, _ROOT_LAGS + 3, offset[1], alpha),
            _lag3(state, _ROOT_LAGS + 6, offset[2], alpha),
        )
        x = _soft_closest(_add(cr, lagged), centers[f], radii[f], zone, stiffness)
        scale = 0.0
        for i in range(n):
            if radii[f, i] < np.inf:
                scale = max(scale, _norm(_vrow(centers[f], i)))
        outside = False
        for i in range(n):
            slack = 1e-9 * (radii[f, i] + scale)
            if _norm(_sub(x, _vrow(centers[f], i))) > radii[f, i] + slack:
                outside = True
        if outside:
            closest_in_balls_frame(x, centers[f], radii[f], weights[f], proj, out, kept)
            x = (out[0], out[1], out[2])
        for c in range(3):
            root[f, c] = x[c]


@numba.njit(cache=True, nogil=True)
def _solve_limb(
    root, rot, pos, world, i, limbs, goal, orientation, oriented, softness, solved
):  # pragma: no cover - jitted
    """:func:`retarget.ik.limb.solve_limb` of limb ``i`` on one pose, ``swivel_mode="nearest"``.

    1. the middle joint turns about its hinge so that the lower joint lies at
       the (softly eased) goal distance ``L`` from the upper joint
       (:func:`_solve_hinge`, eq. 7);
    2. the upper joint takes the shortest rotation onto the goal ray from the
       limb's swivel reference, then the swivel about the ray closest to the
       pose's upper joint ``q*`` (Shin et al. eqs. 21-23:
       ``θ = 2 atan2(q*·(n ⊗ q0), q*·q0)``);
    3. with ``oriented``, the lower joint takes the world ``orientation``.

    Parameters
    ----------
    root, rot, pos, world
        The reference pose (1, 3), (1, J, 4) and its forward kinematics (1, P, 3),
        (1, P, 4) (the upper joint's position and its parent's world rotation).
    i : int
        The limb: its rows of the limb arrays ``limbs``, the tuple ``(limb_joints,
        upper_parent, axis, d1, off2, bone, sides, limits, swivel_reference)``:
        ``limb_joints`` (4, 3) upper, middle,
        lower joint; ``upper_parent`` (4,) (−1: the upper joint is the root);
        ``axis`` (4, 3) hinge axis ``a``; ``d1``, ``off2`` (4, 3) the middle and
        lower joints' offsets; ``bone`` (4, 4) ``h1, r1, l1, l2``; ``sides``
        (4, 2, 3) ``s, t`` (the β = 0 and β = π/2 directions); ``limits`` (4, 2)
        radians; ``swivel_reference`` (4, 4) (``ik.limb._Geometry``,
        :class:`~retarget.ik.limb.Limb`).
    goal : 3-tuple
        World position goal of the lower joint.
    orientation : 4-tuple
        World rotation goal of the lower joint (used with ``oriented``).
    softness : float
        :func:`retarget.ik.limb.soft_reach`'s share of the reach.
    solved : (3, 4)
        Written: the new local rotations of the upper, middle and lower joint.

    Returns
    -------
    float
        ``|L_goal − L|``, the distance the goal is out of reach along its ray.
    """
    limb_joints, upper_parent, axis, d1, off2, bone, sides, limits, swivel_reference = limbs
    u, m, lo = limb_joints[i, 0], limb_joints[i, 1], limb_joints[i, 2]
    q_up = _qrow(rot[0], u)
    q_mid = _qrow(rot[0], m)
    a = _vrow(axis, i)
    if upper_parent[i] < 0:
        w_parent = (1.0, 0.0, 0.0, 0.0)
        p_upper = _vrow(root, 0)
    else:
        w_parent = _qrow(world[0], upper_parent[i])
        p_upper = _vrow(pos[0], u)
    goal_local = _rotate(_conj(w_parent), _sub(goal, p_upper))
    d2 = _rotate(q_mid, _vrow(off2, i))  # middle -> lower, upper frame
    length_goal = _norm(goal_local)

    # (1) middle joint: eq. (7)
    h2 = _dot(d2, a)
    l2 = bone[i, 3]
    r2 = math.sqrt(max(l2 * l2 - h2 * h2, 0.0))
    beta_ref = math.atan2(_dot(d2, _vrow(sides[i], 1)), _dot(d2, _vrow(sides[i], 0)))
    theta_ref = _wrap(
        2.0 * math.atan2(q_mid[1] * a[0] + q_mid[2] * a[1] + q_mid[3] * a[2], q_mid[0])
    )
    delta, length, _, _ = _solve_hinge(
        bone[i, 0],
        bone[i, 1],
        bone[i, 2],
        l2,
        h2,
        r2,
        limits[i, 0],
        limits[i, 1],
        beta_ref,
        theta_ref,
        length_goal,
        softness,
    )
    q_mid_new = _qmul(_axis_quat(a, delta), q_mid)
    # the lower bone turned by Δ about a (Rodrigues), and the limb upper -> lower
    along = _scale(a, h2)
    w_limb = _add(
        _add(_add(_vrow(d1, i), along), _scale(_sub(d2, along), math.cos(delta))),
        _scale(_cross(a, d2), math.sin(delta)),
    )

    # (2) upper joint: from the swivel reference onto the ray, then the nearest swivel
    v_dir = _unit(_rotate(q_up, w_limb), (1.0, 0.0, 0.0))
    n_dir = _unit(goal_local, v_dir)  # goal at the upper joint: keep the direction
    ref = _qrow(swivel_reference, i)
    q0 = _qmul(_between(_rotate(ref, _unit(w_limb, v_dir)), n_dir), ref)
    n_q0 = _qmul((0.0, n_dir[0], n_dir[1], n_dir[2]), q0)
    b = q_up[0] * n_q0[0] + q_up[1] * n_q0[1] + q_up[2] * n_q0[2] + q_up[3] * n_q0[3]
    c = q_up[0] * q0[0] + q_up[1] * q0[1] + q_up[2] * q0[2] + q_up[3] * q0[3]
    q_up_new = _qmul(_axis_quat(n_dir, 2.0 * math.atan2(b, c)), q0)

    # (3) lower joint: the goal orientation (a free joint: no limits to project on)
    q_low = _qrow(rot[0], lo)
    if oriented:
        w_mid = _qmul(_qmul(w_parent, q_up_new), q_mid_new)
        q_low = _qmul(_conj(w_mid), orientation)
    for k in range(4):
        solved[0, k] = q_up_new[k]
        solved[1, k] = q_mid_new[k]
        solved[2, k] = q_low[k]
    return abs(length_goal - length)


@numba.njit(cache=True, nogil=True)
def leg_lift(y, k, low, high):  # pragma: no cover - jitted
    r"""A foot goal's height ``y`` above the character's clearance (length unit) with
    its lift taken at the legs' scale ``k``:

    .. math:: F(y) = y + (k - 1) \int_0^{y} S\Big(\frac{u - y_0}{y_1 - y_0}\Big) du

    with ``S`` the smootherstep from 0 at ``low`` (``y_0``) to 1 at ``high``
    (``y_1``): the performer's own height near the floor (``F(y) = y`` up to
    ``low``, where the clearances already put the sole on it), ``k`` times each
    further rise from ``high`` up, C2 and rising everywhere (``F' = 1 + (k − 1) S``,
    between 1 and ``k``). A kick 30 % of the performer's height up asks a character
    whose legs are 65 % of the performer's for about 20 %: its knee bends as the
    performer's (issue 40; unscaled, blubby's knee swung its thigh back to reach).
    ``k = 1``: ``y``."""
    if k == 1.0 or y <= low:
        return y
    width = high - low
    if width <= 0.0:
        return low + k * (y - low)
    t = min((y - low) / width, 1.0)
    ramp = width * t**4 * (2.5 - 3.0 * t + t * t)  # ∫ S over [low, min(y, high)]
    if y > high:
        ramp += y - high
    return y + (k - 1.0) * ramp


@numba.njit(cache=True, nogil=True)
def penetration_gap(y, band):  # pragma: no cover - jitted
    """Stage 9's soft floor: the gap an end-effector ``y`` above its clearance (below:
    negative) is given: ``y`` from 0 up, ``band (exp(y / band) − 1)`` under it (C1 at 0,
    never under ``y``, never deeper than ``band``). A fix that put the effector on its
    clearance wherever it was under it moved the foot in the frame it crossed, and
    its knee back the next (at 120 Hz, one knee's jerk 13 times copy's). ``band`` 0:
    on the clearance exactly (the hands: what they touch they do not go into)."""
    if y >= 0.0:
        return y
    if band <= 0.0:
        return 0.0
    return band * (math.exp(y / band) - 1.0)


@numba.njit(cache=True, nogil=True)
def _gap(i, influence, objects, p, clearance):  # pragma: no cover - jitted
    """The least signed distance of ``p`` to the objects of end-effector ``i``
    (``influence[i, j] > 0``), less ``clearance``."""
    kind, center, half, frame, size = objects
    gap = np.inf
    for j in range(kind.shape[0]):
        if influence[i, j] > 0.0:
            gap = min(gap, point_distance(kind, center, half, frame, size, j, p))
    return gap - clearance


@numba.njit(cache=True, nogil=True)
def _surface_hit(i, influence, objects, start, end, clearance):  # pragma: no cover - jitted
    """Stage 9 (``puppetry._surface_hit``): where the segment ``start → end`` first
    comes within ``clearance`` of end-effector ``i``'s objects, by 40 bisections;
    an upper joint itself inside: the nearest object's surface point grown by the
    clearance. 3-tuples, length unit; ``objects`` as :func:`_importance` takes them."""
    kind, center, half, frame, size = objects
    lo, hi = 0.0, 1.0
    d = _sub(end, start)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        x = _add(start, _scale(d, mid))
        if _gap(i, influence, objects, x, clearance) < 0.0:
            hi = mid
        else:
            lo = mid
    hit = _add(start, _scale(d, lo))
    if _gap(i, influence, objects, start, clearance) < 0.0:
        nearest, least = -1, np.inf
        for j in range(kind.shape[0]):
            if influence[i, j] > 0.0:
                dist = point_distance(kind, center, half, frame, size, j, end)
                if dist < least or nearest < 0:
                    nearest, least = j, dist
        _, point, normal = point_closest(kind, center, half, frame, size, nearest, end)
        hit = _add(point, _scale(normal, clearance))
    return hit


@numba.njit(cache=True, nogil=True)
def _frame(
    sensors,
    measured,
    out,
    performer_parents,
    sensor_of,
    effectors,
    contact,
    goal_shift,
    toe_shift,
    toe_offsets,
    objects,
    influence,
    parents,
    offsets,
    num_joints,
    limbs,
    lengths,
    character_clearance,
    tolerance,
    band,
    root_estimation,
    softness,
    hold,
    arms,
    gates,
    pivot_eps,
    decay,
    plant_smooth,
    radius_smooth,
    root_smooth,
    zone,
    slack,
    stiffness,
    stride,
    origin,
    lift,
):  # pragma: no cover - jitted
    """Stages 2-9 of one filtered sensor frame (module docstring).

    Parameters
    ----------
    sensors : (S, 13)
        The filter's frame: position, orientation, velocity, angular velocity.
    measured : (S,) bool
        Whether each sensor was measured at the frame (else predicted): the foot
        hold's step back from predicted frames (:func:`hold_feet`).
    out : tuple
        ``(root, rotations, importance, goals, captured_root, captured, residual,
        fixed, state, planted)``. Written, as the fields of
        :class:`~retarget.online.puppetry.PuppetFrames` for one frame: (1, 3),
        (1, J, 4), (1, 4), (1, 4, 3), (1, 3), (1, J, 4), (1, 4), (1, 4) bool; the
        recursion's state (STATE_SIZE,): the foot hold's (:func:`hold_feet`), the
        radius weights' (:func:`radius_weights`) and the root's (:func:`smooth_root`),
        updated; and the plant weights (1, 2), written.
    performer_parents, sensor_of : (S,), (J,) int
        The performer's joint parents; the sensor each character joint copies.
    effectors : (4,) int
        The ankle and wrist sensors.
    contact : tuple
        ``(contacts, contact_owner, contact_clearance, contact_influence, lookahead)``,
        (P,) int, (P,) int, (P,), (P, m), float: the sensors whose distances make the
        importance (those four, then the toes), the end-effector each counts for,
        their clearances, their ``D_kj`` (eq. 13) and ``λ`` (eq. 12, seconds).
    goal_shift, toe_shift, toe_offsets : (4,), (T,), (T, 3)
        As :func:`_goals` takes them.
    objects : tuple
        ``(kind, center, half, frame, size)``, (m,) int, (m, 3), (m, 3), (m, 3, 3), (m,):
        the objects (:mod:`retarget.environment._kernels.shapes`).
    influence : (4, m)
        ``D_ij``: the penetration fix keeps end-effector ``i`` out of the objects
        with ``D_ij > 0``.
    parents, offsets, num_joints : (N,) int, (1, N, 3), int
        The character's points (``kinematics._fk_kernel``).
    limbs : tuple
        ``(limb_joints, upper_parent, axis, d1, off2, bone, sides, limits,
        swivel_reference)``: the limbs (:func:`_solve_limb`).
    lengths, character_clearance : (4,)
        ``l_i`` (eq. 17) and the character's end-effector clearances.
    tolerance : float
        ``1e-9`` character heights: a goal this far out of its ball counts.
    band : float
        Stage 9's soft band (:func:`penetration_gap`), length unit.
    root_estimation : bool
    softness : float
    hold, arms, gates, pivot_eps, decay : bool, (2, 3), (4,), float, float
        Stage 4b on or off, then as :func:`hold_feet` takes them.
    plant_smooth, radius_smooth, root_smooth : float
        ``α`` of the lags of the plant weights (:func:`hold_feet`), of the radius
        weights (:func:`radius_weights`) and of the root (:func:`smooth_root`).
    zone, slack, stiffness : (4,), (4,), float
        The soft zones' depths ``ζ_i`` and ``K`` of :func:`smooth_root`, and how far
        beyond its ball (eq. 17) the root may go: the balls of :func:`smooth_root`
        and of the body posture check have that much more radius.
    stride, origin : float, (3,)
        The sensors' horizontal positions about ``origin`` and their horizontal
        velocities are taken times ``stride`` (:func:`_stride`).
    lift : (3,)
        ``(k, low, high)`` of :func:`leg_lift`: each foot goal's height above the
        character's clearance goes through it (``k = 1``: unchanged).

    Returns
    -------
    int
        ``SOLVED``; ``NEEDS_POSTURE`` when a goal is out of its ball after the
        root estimation (stage 6 must run: the outputs are incomplete);
        ``NOT_FINITE`` when a filtered sensor is not finite (nothing written).
    """
    for s in range(sensors.shape[0]):
        for c in range(10):
            if not math.isfinite(sensors[s, c]):
                return NOT_FINITE
    if stride != 1.0:
        sensors = _stride(sensors, stride, origin)
    (root, rotations, importance, goals, captured_root, captured, residual, fixed, state,
     planted) = out  # fmt: skip
    contacts = contact[0]
    limb_joints = limbs[0]
    n_points = parents.shape[0]
    # (2) captured posture
    _captured(sensors, performer_parents, sensor_of, captured, captured_root)
    # (3) importance, (4) goals
    weights = np.empty(contacts.shape[0])
    gaps = np.empty(contacts.shape[0])
    _importance(sensors, contact, objects, weights, gaps, importance)
    pos = np.empty((1, n_points, 3))
    world = np.empty((1, n_points, 4))
    _fk_kernel(captured_root, captured, parents, offsets, num_joints, pos, world)
    hips = np.zeros((2, 3))  # the character's hips from the performer's, along the floor
    for i in range(2):
        upper = limb_joints[i, 0]
        for c in (0, 2):
            hips[i, c] = pos[0, upper, c] - sensors[sensor_of[upper], c]
    _goals(sensors, effectors, contacts, goal_shift, toe_shift, toe_offsets, weights, goals, hips)
    if lift[0] != 1.0:  # each foot's lift at the legs' scale (:func:`leg_lift`)
        for i in range(2):
            y = _gap(i, influence, objects, _vrow(goals[0], i), character_clearance[i])
            if math.isfinite(y):
                goals[0, i, 1] += leg_lift(y, lift[0], lift[1], lift[2]) - y
    # (4b) the foot hold, and a planted foot's importance
    planted[0, 0], planted[0, 1] = 0.0, 0.0
    if hold:
        foot_gaps = np.full((1, 2, 2), np.inf)
        foot_v = np.zeros((1, 2, 2, 3))
        foot_q = np.empty((1, 2, 4))
        foot_measured = np.ones((1, 2), np.bool_)
        for i in range(2):
            points = (effectors[i], contacts[4 + i] if contacts.shape[0] > 4 else -1)
            for k in range(2):
                if points[k] < 0:
                    continue
                foot_measured[0, i] &= measured[points[k]]
                foot_gaps[0, i, k] = gaps[i if k == 0 else 4 + i]
                for c in range(3):
                    foot_v[0, i, k, c] = sensors[points[k], 7 + c]
            for c in range(4):
                foot_q[0, i, c] = sensors[effectors[i], 3 + c]
        hold_state = state[: 2 * HOLD_COLUMNS].reshape((2, HOLD_COLUMNS))
        hold_feet(
            goals,
            foot_gaps,
            foot_v,
            foot_q,
            foot_measured,
            arms,
            gates,
            pivot_eps,
            decay,
            plant_smooth,
            hold_state,
            planted,
        )
        for i in range(2):
            importance[0, i] = 1.0 - (1.0 - importance[0, i]) * (1.0 - planted[0, i])
    # (5) root position: the balls' importance and reach, the paper's estimate, smoothed
    w_r = np.empty((1, 4))
    reach = np.empty((1, 4))
    radius_weights(importance, lengths, radius_smooth, state, w_r, reach)
    importance[0, 0], importance[0, 1] = w_r[0, 0], w_r[0, 1]  # the feet's, for their limbs
    radii = np.empty((1, 4))
    for i in range(4):
        radii[0, i] = (reach[0, i] / w_r[0, i] if w_r[0, i] > 0.0 else np.inf) + slack[i]
    if root_estimation:
        estimate = np.empty((1, 3))
        _estimate_root(captured_root, pos, limb_joints, goals, reach[0], w_r[0], estimate)
        centers = np.empty((1, 4, 3))
        for i in range(4):
            from_upper = _sub(_vrow(captured_root, 0), _vrow(pos[0], limb_joints[i, 0]))
            c_i = _add(_vrow(goals[0], i), from_upper)
            centers[0, i, 0], centers[0, i, 1], centers[0, i, 2] = c_i
        smooth_root(
            captured_root, estimate, centers, radii, w_r, zone, stiffness, root_smooth, state, root
        )
    else:
        for c in range(3):
            root[0, c] = captured_root[0, c]
    # (6) the body posture is needed where a goal is still out of its ball
    for i in range(4):
        shift = _sub(_vrow(root, 0), _vrow(captured_root, 0))
        upper_at = _add(_vrow(pos[0], limb_joints[i, 0]), shift)
        if _norm(_sub(upper_at, _vrow(goals[0], i))) - radii[0, i] > tolerance:
            return NEEDS_POSTURE
    # (7) limbs from the captured posture, (8) blend (eq. 24)
    _fk_kernel(root, captured, parents, offsets, num_joints, pos, world)
    for j in range(num_joints):
        for c in range(4):
            rotations[0, j, c] = captured[0, j, c]
    solved = np.empty((3, 4))
    for i in range(4):
        s = effectors[i]
        orientation = (sensors[s, 3], sensors[s, 4], sensors[s, 5], sensors[s, 6])
        residual[0, i] = _solve_limb(
            root, captured, pos, world, i, limbs, _vrow(goals[0], i), orientation, True,
            softness, solved,
        )  # fmt: skip
        for k in range(3):
            j = limb_joints[i, k]
            q = _slerp(_qrow(captured[0], j), _qrow(solved, k), importance[0, i])
            for c in range(4):
                rotations[0, j, c] = q[c]
    # (9) penetration: an end-effector inside its objects goes to where the ray from
    # its upper joint meets them, by the limb IK again
    _fk_kernel(root, rotations, parents, offsets, num_joints, pos, world)
    for i in range(4):
        fixed[0, i] = False
        u, lo = limb_joints[i, 0], limb_joints[i, 2]
        effector = _vrow(pos[0], lo)
        clearance = character_clearance[i]
        depth = _gap(i, influence, objects, effector, 0.0)
        if not depth < clearance:  # also no objects (depth = inf)
            continue
        want = clearance + penetration_gap(depth - clearance, band if i < 2 else 0.0)
        hit = _surface_hit(i, influence, objects, _vrow(pos[0], u), effector, want)
        now = np.empty((1, n_points, 3))  # the upper joint's frame in the current pose
        now_world = np.empty((1, n_points, 4))
        _fk_kernel(root, rotations, parents, offsets, num_joints, now, now_world)
        _solve_limb(
            root, rotations, now, now_world, i, limbs, hit, (1.0, 0.0, 0.0, 0.0), False,
            0.0, solved,
        )  # fmt: skip  # softness 0: hit is on the segment to the effector (in reach)
        for k in range(3):
            for c in range(4):
                rotations[0, limb_joints[i, k], c] = solved[k, c]
        fixed[0, i] = True
    return SOLVED


def lag_coefficient(seconds: float, fps: float) -> float:
    """``α = 1 − exp(−1 / (τ fps))`` of a first-order lag of time constant ``τ`` seconds
    (:func:`_lag3`); 1 (no lag) for ``τ = 0``."""
    return 1.0 - math.exp(-1.0 / (seconds * fps)) if seconds > 0 else 1.0
