"""Online filtering of sensor positions and orientations: Shin et al. 2001, §3.

Shin, Lee, Shin & Gleicher, "Computer puppetry: an importance-based approach",
ACM TOG 20(2), 2001, section 3 "Motion filtering", eqs. (1)-(10) (the paper
numbers two equations "(9)"; the second, the update of ``q_e``, is eq. (10)
here). Each sensor is filtered on its own:

* the target orientation ``q_e`` (a unit quaternion) is kept *outside* the
  Kalman filter; the state is ``x = (p, ṗ, r, ṙ)`` (eq. 1), where ``r`` is the
  incremental rotation of the sensor since ``q_e`` of the last frame, measured
  as ``r(t) = log(q_e(t − Δt)⁻¹ q(t))`` (eq. 2) on the shortest arc;
* a constant-velocity model ``A`` (eq. 3) predicts ``x`` and ``P`` (eq. 4)
  with the process noise ``Q`` of eq. (5) (:func:`process_noise`);
* the measurement is ``z = (p, r) = H x`` (eq. 6); the gain (eq. 7) and the
  residual (eq. 8) correct ``x`` and ``P`` (eq. 9);
* ``q_e(t) = q_e(t − Δt) exp(r̂(t))`` (eq. 10), then ``r̂`` is reset to zero;
  ``ṙ`` is kept. ``q_e`` is renormalised every frame, so it stays unit over
  streams of any length.

Conventions (DESIGN.md, "Conventions"): quaternions ``(w, x, y, z)``, rotation
vectors with the *full* angle (``exp(θ n) = (cos θ/2, n sin θ/2)``; the paper
writes ``e^{θn/2}``), lengths in the data's unit, time in seconds: ``Δt`` is
``1 / fps``, so ``ṗ`` is in unit/s and ``ṙ`` in rad/s. The ``q_i`` of eq. (5)
are per-frame variances, as in the paper: the defaults of
:class:`KalmanParameters` are for 120 Hz data in centimetres.

**Why numba.** The recursion runs frame after frame, each frame's estimate
from the last one, so numpy cannot vectorise it over frames, and one frame's
work (a 12 × 12 covariance per sensor) is so small that numpy's overhead per
call would be nearly all of the time. The per-frame update is one compiled
kernel (``_filter_frames``) that :meth:`SensorFilter.update` calls on one
frame and :func:`filter_stream` on a whole recording, so the formula exists
once and the two agree bit for bit. It reuses the quaternion product, ``exp``
and ``log`` of :mod:`retarget.core.quat`.

**The covariance recursion** (eqs. 4, 7, 9) does not depend on the measured
values, only on whether a sensor was measured. Once a sensor's corrected ``P``
comes out bit-identical to the one it came from, every further measured frame
would repeat the same floating-point operations on the same numbers: the
kernel then keeps ``P`` and the gain ``K`` and skips eqs. (4), (7) and (9),
an exact shortcut (the results are the same bits), until a drop-out breaks it.
``P`` settles to the bit within a second with an ``R`` without cross terms
(the default); with cross terms it may keep wandering in its last bit, and
every frame runs the full update.

A sensor whose row is not finite (NaN: dropped by the device) is predicted
only: eq. (3) and (4), no correction, and ``q_e`` advances by ``exp(Δt ṙ)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from ..core import quat
from ..core.arrays import Array
from ..core.lazy import loader

_kernels = loader("retarget.filters._kernels.kalman")

__all__ = [
    "KalmanParameters",
    "SensorEstimate",
    "SensorFilter",
    "estimate_noise",
    "filter_stream",
    "process_noise",
    "still_window",
]


_DEG = np.pi / 180.0


def _default_measurement_noise() -> Array:
    # 0.5 cm per position axis, 1° per rotation-vector axis (standard deviations)
    return np.diag([0.5**2] * 3 + [_DEG**2] * 3)


def process_noise(q: ArrayLike) -> Array:
    """The process noise covariance ``Q`` of Shin et al. 2001, eq. (5).

    .. math::
        Q = \\begin{bmatrix} q_1 I & q_2 I & 0 & 0 \\\\ q_3 I & q_4 I & 0 & 0 \\\\
            0 & 0 & q_5 I & q_6 I \\\\ 0 & 0 & q_7 I & q_8 I \\end{bmatrix}

    Parameters
    ----------
    q : array_like, shape (8,)
        ``q1 .. q8``, per-frame variances in the state's units: ``q1`` unit²,
        ``q2, q3`` unit²/s, ``q4`` unit²/s², ``q5`` rad², ``q6, q7`` rad²/s,
        ``q8`` rad²/s².

    Returns
    -------
    ndarray, shape (12, 12)
        In the order of the state ``x = (p, ṗ, r, ṙ)`` (eq. 1).

    >>> process_noise(np.arange(1.0, 9.0))[[0, 3, 6, 9]][:, [0, 3, 6, 9]].tolist()
    [[1.0, 2.0, 0.0, 0.0], [3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 5.0, 6.0], [0.0, 0.0, 7.0, 8.0]]
    """
    q = np.asarray(q, dtype=np.float64)
    if q.shape != (8,):
        raise ValueError(f"Expected `q` to have shape (8,) (q1 .. q8), got {q.shape}")
    blocks = np.zeros((4, 4))
    blocks[:2, :2] = q[:4].reshape(2, 2)
    blocks[2:, 2:] = q[4:].reshape(2, 2)
    return np.asarray(np.kron(blocks, np.eye(3)), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class KalmanParameters:
    """The noise model of the sensor filter (Shin et al. 2001, eqs. 5 and 7).

    The defaults suit 120 Hz data in centimetres with about 0.5 cm of position
    noise and 1° of orientation noise per axis; measure ``R`` of your device
    with :func:`estimate_noise` on a still stretch (:func:`still_window`).
    They are ``q4 = 50`` cm²/s² and ``q8 = 0.1`` rad²/s² (random walks of the
    rates, ≈ 7 cm/s and 18°/s per frame), the other ``q_i`` zero: the best
    over ``q4`` and ``q8`` for every joint of ``lafan_walk.bvh`` at 120 Hz
    under that noise, where they bring the RMS error to 0.61 (positions) and
    0.65 (orientations) of the raw error without lag (``tests/test_kalman.py``).

    Attributes
    ----------
    q : tuple of 8 float
        ``q1 .. q8`` of the process noise ``Q``, eq. (5) (:func:`process_noise`
        gives their units). Small values smooth more, large values follow the
        measurements more closely. A covariance is symmetric, so usually
        ``q2 == q3`` and ``q6 == q7``; the symmetric part of each 2 × 2 block
        must be positive semi-definite.
    measurement_noise : ndarray, shape (6, 6) or (S, 6, 6)
        ``R`` of eq. (7), the covariance of ``z = (p, r)``: positions in the
        data's unit², rotation vectors in rad², cross terms included; one for
        all sensors or one per sensor. Symmetric positive definite.
    initial_velocity_variance : tuple of 2 float
        Variances of ``ṗ`` (unit²/s²) and ``ṙ`` (rad²/s²) when a sensor's
        state is started from its first measurement (velocities zero). ``P``
        starts as ``R`` on ``(p, r)`` and these on the velocities.
    lag : int
        Fixed-lag smoothing, beyond the paper (its filter is ``lag = 0``, the
        default): each frame returns the estimate of the frame ``lag`` frames
        back, corrected by the frames since (a Rauch–Tung–Striebel pass over
        them, :func:`_smooth`). At 120 Hz, ``lag = 2`` (17 ms late) brings the
        error on ``lafan_walk.bvh`` under half the raw error, where the filter
        alone stops at 0.61.
    """

    q: tuple[float, ...] = (0.0, 0.0, 0.0, 50.0, 0.0, 0.0, 0.0, 0.1)
    measurement_noise: Array = field(default_factory=_default_measurement_noise)
    initial_velocity_variance: tuple[float, float] = (100.0**2, 2.0**2)
    lag: int = 0

    def __post_init__(self) -> None:
        q = np.asarray(self.q, dtype=np.float64)
        if q.shape != (8,) or not np.isfinite(q).all():
            raise ValueError(f"Expected `q` to be 8 finite floats (q1 .. q8), got {self.q!r}")
        for name, block in (("q1..q4", q[:4]), ("q5..q8", q[4:])):
            m = block.reshape(2, 2)
            if np.linalg.eigvalsh(0.5 * (m + m.T)).min() < -1e-12 * np.abs(m).max():
                raise ValueError(
                    f"Expected the block [[{name}]] of Q to have a positive semi-definite "
                    f"symmetric part, got {block.tolist()}"
                )
        object.__setattr__(self, "q", tuple(float(v) for v in q))
        r = np.array(self.measurement_noise, dtype=np.float64)
        if r.shape[-2:] != (6, 6) or r.ndim not in (2, 3):
            raise ValueError(
                f"Expected `measurement_noise` of shape (6, 6) or (S, 6, 6), got {r.shape}"
            )
        if not np.isfinite(r).all():
            raise ValueError("`measurement_noise` contains NaN or infinite values")
        scale = np.abs(r).max(axis=(-2, -1), keepdims=True)
        if (np.abs(r - np.swapaxes(r, -1, -2)) > 1e-12 * scale).any():
            raise ValueError("Expected a symmetric `measurement_noise`")
        if (np.linalg.eigvalsh(r).min(axis=-1) <= 0.0).any():
            raise ValueError("Expected a positive definite `measurement_noise`")
        r.setflags(write=False)
        object.__setattr__(self, "measurement_noise", r)
        v = np.asarray(self.initial_velocity_variance, dtype=np.float64)
        if v.shape != (2,) or not (np.isfinite(v).all() and (v > 0).all()):
            raise ValueError(
                "Expected `initial_velocity_variance` to be 2 positive floats, "
                f"got {self.initial_velocity_variance!r}"
            )
        object.__setattr__(self, "initial_velocity_variance", (float(v[0]), float(v[1])))
        if isinstance(self.lag, bool) or not isinstance(self.lag, int | np.integer):
            raise ValueError(f"Expected an integer `lag` >= 0, got {self.lag!r}")
        if self.lag < 0:
            raise ValueError(f"Expected an integer `lag` >= 0, got {self.lag!r}")
        object.__setattr__(self, "lag", int(self.lag))


@dataclass(frozen=True, eq=False)
class SensorEstimate:
    """Filtered sensors: one frame ``(S, ...)`` or a recording ``(F, S, ...)``.

    Attributes
    ----------
    positions : ndarray, shape (..., S, 3)
        ``p̂``, in the data's unit.
    orientations : ndarray, shape (..., S, 4)
        ``q_e``, unit quaternions (w, x, y, z), continuous in sign over time.
    velocities : ndarray, shape (..., S, 3)
        ``ṗ``, unit/s.
    angular_velocities : ndarray, shape (..., S, 3)
        ``ṙ``, rad/s: the rate of the incremental rotation ``q_e(t−Δt)⁻¹ q(t)``,
        i.e. the angular velocity in the sensor's own (body) frame.

    A sensor not measured yet (every row so far dropped) is NaN. The arrays
    are read-only.
    """

    positions: Array
    orientations: Array
    velocities: Array
    angular_velocities: Array

    def __post_init__(self) -> None:
        for name, width in (
            ("positions", 3),
            ("orientations", 4),
            ("velocities", 3),
            ("angular_velocities", 3),
        ):
            a = np.array(getattr(self, name), dtype=np.float64)
            if a.ndim < 2 or a.shape[-1] != width or a.shape[:-1] != self.positions.shape[:-1]:
                raise ValueError(
                    f"Expected `{name}` of shape (..., S, {width}) matching `positions`, "
                    f"got {a.shape}"
                )
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    @classmethod
    def _from_packed(cls, out: Array) -> SensorEstimate:
        """Views of the kernel's output ``(..., S, 13)``: p, q_e, ṗ, ṙ (made read-only)."""
        out.setflags(write=False)
        estimate = object.__new__(cls)
        for name, cols in (
            ("positions", slice(0, 3)),
            ("orientations", slice(3, 7)),
            ("velocities", slice(7, 10)),
            ("angular_velocities", slice(10, 13)),
        ):
            object.__setattr__(estimate, name, out[..., cols])
        return estimate


# -- fixed-lag smoothing --------------------------------------------------------------------
_ALONG = np.array([0, 1, 2, 6, 7, 8])  # the measured components; their rates are 3 further


def _transition(dt: float) -> Array:
    """``A`` of eq. (3), (12, 12)."""
    a = np.eye(12)
    a[_ALONG, _ALONG + 3] = dt
    return a


def _smooth(frames: list[Array], covariances: list[Array], Q: Array, dt: float) -> Array:
    """The oldest of a run of filtered frames, smoothed by the ones after it.

    A Rauch–Tung–Striebel pass (the error state of a multiplicative filter):
    from the newest frame back, ``x̂ˢ_k = x̂_k + C_k (x̂ˢ_{k+1} − A x̂_k)`` with
    ``C_k = P_k Aᵀ (A P_k Aᵀ + Q)⁻¹``, where ``x̂ˢ_{k+1}``'s rotation is taken
    relative to ``q_e(k)`` (``r = log(q_e(k)⁻¹ qˢ_{k+1})``, as eq. 2 measures it),
    and ``qˢ_k = q_e(k) exp(r̂ˢ_k)``.

    Parameters
    ----------
    frames : list of ndarray (S, 13)
        Packed filtered frames (``p̂, q_e, ṗ, ṙ``), oldest first.
    covariances : list of ndarray (S, 12, 12)
        ``P`` after each of them.
    Q : ndarray, shape (12, 12)
    dt : float

    Returns
    -------
    ndarray, shape (S, 13)
        The oldest frame, smoothed; a sensor with a NaN in any frame keeps its
        filtered values.
    """
    a = _transition(dt)

    def state(packed: Array) -> Array:
        x = np.zeros((len(packed), 12))
        x[:, 0:3], x[:, 3:6], x[:, 9:12] = packed[:, 0:3], packed[:, 7:10], packed[:, 10:13]
        return x

    out = frames[0].copy()
    ok = np.isfinite(np.stack(frames)).all(axis=(0, 2))  # started in every frame
    if not ok.any():
        return out
    newest = frames[-1][ok]
    x_next, q_next = state(newest), newest[:, 3:7]
    for k in range(len(frames) - 2, -1, -1):
        x_k, q_k = state(frames[k][ok]), frames[k][ok, 3:7]
        ahead = x_next.copy()
        ahead[:, 6:9] = quat.log(quat.multiply(quat.conjugate(q_k), q_next))
        predicted = x_k @ a.T
        p_k = covariances[k][ok]
        p_ahead = a @ p_k @ a.T + Q
        gain = np.swapaxes(np.linalg.solve(p_ahead, a @ p_k), -1, -2)  # P Aᵀ P⁻⁻¹ (symmetric)
        x_next = x_k + np.einsum("sij,sj->si", gain, ahead - predicted)
        q_next = quat.multiply(q_k, quat.exp(x_next[:, 6:9]))
    out[ok, 0:3], out[ok, 3:7] = x_next[:, 0:3], q_next
    out[ok, 7:10], out[ok, 10:13] = x_next[:, 3:6], x_next[:, 9:12]
    return out


# -- the public surface -------------------------------------------------------------------


def _check_fps(fps: float) -> float:
    fps = float(fps)
    if not (np.isfinite(fps) and fps > 0):
        raise ValueError(f"Expected fps > 0, got {fps}")
    return fps


def _as_frames(positions: ArrayLike, orientations: ArrayLike, lead: str) -> tuple[Array, Array]:
    """C-contiguous float64 ``(..., S, 3)`` and ``(..., S, 4)`` with matching leading axes.

    ``lead`` names the leading axes expected (``"S"`` or ``"F, S"``).
    """
    ndim = lead.count(",") + 2
    p = np.ascontiguousarray(positions, dtype=np.float64)
    o = np.ascontiguousarray(orientations, dtype=np.float64)
    # writeable as well, so that the kernel has one compiled specialisation
    p = p if p.flags.writeable else p.copy()
    o = o if o.flags.writeable else o.copy()
    if p.ndim != ndim or p.shape[-1] != 3:
        raise ValueError(f"Expected `positions` of shape ({lead}, 3), got {p.shape}")
    if o.shape != (*p.shape[:-1], 4):
        raise ValueError(
            f"Expected `orientations` of shape ({lead}, 4) = {(*p.shape[:-1], 4)} "
            f"to match `positions`, got {o.shape}"
        )
    return p, o


class SensorFilter:
    """The online filter of Shin et al. 2001, §3, over ``S`` sensors at once.

    Each :meth:`update` takes one frame of every sensor and returns the
    filtered frame, from this frame and the filter's state only (causal).
    All sensors go through one compiled call; each keeps its own covariance.

    Parameters
    ----------
    num_sensors : int
        ``S``.
    parameters : KalmanParameters or None
        The noise model (None: the defaults of :class:`KalmanParameters`); its
        ``measurement_noise`` is one ``(6, 6)`` for all or ``(S, 6, 6)``.
    fps : float
        Frames per second of the stream (``Δt = 1 / fps``).

    Examples
    --------
    >>> sensors = SensorFilter(1, None, fps=120.0)
    >>> first = sensors.update([[0.0, 90.0, 0.0]], [[1.0, 0.0, 0.0, 0.0]])
    >>> first.positions.tolist(), first.velocities.tolist()
    ([[0.0, 90.0, 0.0]], [[0.0, 0.0, 0.0]])
    >>> moved = sensors.update([[1.0, 90.0, 0.0]], [[1.0, 0.0, 0.0, 0.0]])
    >>> bool(0.0 < moved.positions[0, 0] < 1.0)
    True
    """

    def __init__(self, num_sensors: int, parameters: KalmanParameters | None, fps: float) -> None:
        if isinstance(num_sensors, bool) or not isinstance(num_sensors, int | np.integer):
            raise ValueError(f"Expected an integer `num_sensors`, got {num_sensors!r}")
        if num_sensors < 1:
            raise ValueError(f"Expected `num_sensors` >= 1, got {num_sensors}")
        parameters = KalmanParameters() if parameters is None else parameters
        if not isinstance(parameters, KalmanParameters):
            raise ValueError(
                f"Expected `parameters` to be a KalmanParameters, got {type(parameters).__name__}"
            )
        self._parameters = parameters
        self._fps = _check_fps(fps)
        n = int(num_sensors)
        r = parameters.measurement_noise
        if r.ndim == 3 and r.shape[0] != n:
            raise ValueError(
                f"Expected `measurement_noise` of shape (6, 6) or ({n}, 6, 6) for {n} sensors, "
                f"got {r.shape}"
            )
        self._R = np.broadcast_to(r, (n, 6, 6)).copy()  # C and writeable, as the kernel is compiled
        self._Q = process_noise(parameters.q)
        vp, vr = parameters.initial_velocity_variance
        measured = np.array([0, 1, 2, 6, 7, 8])
        self._P0 = np.zeros((n, 12, 12))
        self._P0[:, measured[:, None], measured] = self._R
        self._P0[:, [3, 4, 5, 9, 10, 11], [3, 4, 5, 9, 10, 11]] = [vp] * 3 + [vr] * 3
        self._x = np.zeros((n, 12))
        self._P = np.zeros((n, 12, 12))
        self._K = np.zeros((n, 12, 6))
        self._q_e = np.zeros((n, 4))
        self._started = np.zeros(n, np.bool_)
        self._steady = np.zeros(n, np.bool_)
        self._dropped = (np.full((1, n, 3), np.nan), np.full((1, n, 4), np.nan))
        self._recent: list[tuple[Array, Array]] = []  # (packed frame, P) for the lag

    @property
    def num_sensors(self) -> int:
        """``S``."""
        return self._x.shape[0]

    @property
    def parameters(self) -> KalmanParameters:
        """The noise model."""
        return self._parameters

    @property
    def fps(self) -> float:
        """Frames per second of the stream."""
        return self._fps

    def reset(self) -> None:
        """Forget every sensor: the next measured row of each starts it afresh."""
        self._started[:] = False
        self._steady[:] = False
        self._recent.clear()

    @property
    def covariance(self) -> Array:
        """``P`` of every sensor after the last frame, a copy, shape (S, 12, 12).

        In the order of ``x = (p, ṗ, r, ṙ)``; undefined (stale) for a sensor not
        started yet.
        """
        return self._P.copy()

    def _run(self, positions: Array, orientations: Array) -> Array:
        out = np.empty((*positions.shape[:2], 13))
        zero = _kernels()._filter_frames(
            positions,
            orientations,
            1.0 / self.fps,
            self._Q,
            self._R,
            self._P0,
            self._x,
            self._P,
            self._K,
            self._q_e,
            self._started,
            self._steady,
            out,
        )
        if zero >= 0:
            f, s = divmod(zero, positions.shape[1])
            raise ValueError(
                f"`orientations` has a zero quaternion (frame {f}, sensor {s}); "
                "use NaN for a dropped row"
            )
        return out

    def _lagged(self, frame: Array) -> Array:
        """With ``lag`` L: the frame L back (the first while fewer have come),
        smoothed by the ones since (:func:`_smooth`); else ``frame`` itself."""
        lag = self._parameters.lag
        if lag == 0:
            return frame
        self._recent.append((frame, self._P.copy()))
        del self._recent[: -(lag + 1)]
        frames, covariances = zip(*self._recent, strict=True)
        return _smooth(list(frames), list(covariances), self._Q, 1.0 / self.fps)

    def update(self, positions: ArrayLike, orientations: ArrayLike) -> SensorEstimate:
        """Filter one frame: eqs. (2)-(10) for every sensor.

        Parameters
        ----------
        positions : array_like, shape (S, 3)
            Measured positions, in the data's unit.
        orientations : array_like, shape (S, 4)
            Measured orientations (w, x, y, z), of any sign; need not be unit.
            A sensor whose position or orientation row has a NaN is dropped
            for this frame: predicted only.

        Returns
        -------
        SensorEstimate
            Arrays of shape (S, ...).
        """
        return SensorEstimate._from_packed(self.update_packed(positions, orientations))

    def update_packed(self, positions: ArrayLike, orientations: ArrayLike) -> Array:
        """:meth:`update`, its frame packed in one array, as the filter's kernel writes it
        (for callers that hand it on to compiled code: no views, no copies).

        Parameters
        ----------
        positions : array_like, shape (S, 3)
        orientations : array_like, shape (S, 4)
            As :meth:`update` takes them.

        Returns
        -------
        ndarray, shape (S, 13)
            A new writable C array; per sensor, the columns of :class:`SensorEstimate`
            side by side: ``p̂`` (0:3), ``q_e`` (3:7), ``ṗ`` (7:10), ``ṙ`` (10:13).
        """
        p, o = _as_frames(positions, orientations, "S")
        if p.shape[0] != self.num_sensors:
            raise ValueError(
                f"Expected `positions` of shape ({self.num_sensors}, 3), got {p.shape}"
            )
        return self._lagged(self._run(p[None], o[None])[0])

    def predict(self) -> SensorEstimate:
        """Advance one frame without measurements (a missing frame): eqs. (3), (4), (10).

        The same as :meth:`update` with every row NaN.
        """
        return SensorEstimate._from_packed(self._lagged(self._run(*self._dropped)[0]))


def filter_stream(
    positions: ArrayLike,
    orientations: ArrayLike,
    fps: float,
    parameters: KalmanParameters | None = None,
) -> SensorEstimate:
    """Filter a whole recording: :meth:`SensorFilter.update` on every frame in turn.

    Bit for bit the frames that a fresh :class:`SensorFilter` returns, in one
    compiled loop (frame by frame with a ``lag``: frame ``f`` of the result is
    the estimate of frame ``f − lag``).

    Parameters
    ----------
    positions : array_like, shape (F, S, 3)
    orientations : array_like, shape (F, S, 4)
        Measurements, as :meth:`SensorFilter.update` takes them (NaN rows dropped).
    fps : float
    parameters : KalmanParameters, optional

    Returns
    -------
    SensorEstimate
        Arrays of shape (F, S, ...).
    """
    p, o = _as_frames(positions, orientations, "F, S")
    sensors = SensorFilter(p.shape[1], parameters, fps)
    if sensors.parameters.lag == 0:
        return SensorEstimate._from_packed(sensors._run(p, o))
    out = np.stack([sensors.update_packed(p[f], o[f]) for f in range(len(p))]) if len(p) else None
    return SensorEstimate._from_packed(out if out is not None else sensors._run(p, o))


def _quat_mean(q: Array) -> Array:
    """The principal eigenvector of ``Σ q qᵀ`` over axis 0 (sign-blind), ``(S, 4)``."""
    m = np.einsum("fsi,fsj->sij", q, q)
    _, vectors = np.linalg.eigh(m)
    return vectors[..., -1]


def estimate_noise(positions: ArrayLike, orientations: ArrayLike) -> Array:
    """The measurement noise ``R`` of eq. (7), from sensors held still.

    Shin et al. 2001, §3: "we measure the noise while holding the sensor
    stationary". Per sensor, the sample covariance (divisor ``F − 1``) of
    ``z = (p, v)`` with ``v = log(q̄⁻¹ q)`` the rotation vector of each
    orientation about the mean orientation ``q̄`` (the principal eigenvector
    of ``Σ q qᵀ``, blind to the sign of ``q``). Cross terms between positions
    and rotations are kept.

    Parameters
    ----------
    positions : array_like, shape (F, S, 3)
    orientations : array_like, shape (F, S, 4)
        A still stretch (:func:`still_window` finds one), all finite, F >= 2.

    Returns
    -------
    ndarray, shape (S, 6, 6)
        Positions in the data's unit², rotation vectors in rad²; pass it as
        :attr:`KalmanParameters.measurement_noise`.
    """
    p, o = _as_frames(positions, orientations, "F, S")
    if p.shape[0] < 2:
        raise ValueError(f"Expected at least 2 frames, got {p.shape[0]}")
    if not (np.isfinite(p).all() and np.isfinite(o).all()):
        raise ValueError("Expected finite `positions` and `orientations` in a still stretch")
    norm = np.linalg.norm(o, axis=-1, keepdims=True)
    if (norm == 0.0).any():
        raise ValueError("`orientations` contains a zero quaternion")
    o = o / norm
    v = quat.log(quat.multiply(quat.conjugate(_quat_mean(o)), o))  # shortest arc: ±q alike
    z = np.concatenate([p, v], axis=-1)
    z = z - z.mean(axis=0)
    return np.einsum("fsi,fsj->sij", z, z) / (z.shape[0] - 1)


def still_window(positions: ArrayLike, fps: float, seconds: float = 0.5) -> slice:
    """The stretch of ``seconds`` where the sensors move least.

    The window of ``round(seconds · fps)`` frames minimising the sum over
    sensors and axes of the positions' variance within it; windows with a
    non-finite position are skipped. Feed it to :func:`estimate_noise`.

    Parameters
    ----------
    positions : array_like, shape (F, S, 3)
    fps : float
    seconds : float
        Duration of the window (at least 2 frames, at most F).

    Returns
    -------
    slice
        Frames ``start : start + n``; the first such window on ties.
    """
    p = np.asarray(positions, dtype=np.float64)
    if p.ndim != 3 or p.shape[-1] != 3:
        raise ValueError(f"Expected `positions` of shape (F, S, 3), got {p.shape}")
    fps = _check_fps(fps)
    n = round(float(seconds) * fps)
    if not 2 <= n <= p.shape[0]:
        raise ValueError(
            f"Expected a window of 2 to {p.shape[0]} frames, got {seconds} s at {fps:g} fps "
            f"= {n} frames"
        )
    bad = np.asarray(~np.isfinite(p).all(axis=(1, 2)))
    if bad.all():
        raise ValueError("`positions` has no finite frame")
    # centre on the mean of the finite frames so the running sums lose no digits
    x = np.where(bad[:, None, None], 0.0, p - p[~bad].mean(axis=0)).reshape(p.shape[0], -1)

    def window_sums(a: ArrayLike) -> Array:
        c = np.concatenate([np.zeros((1, *np.shape(a)[1:])), np.cumsum(a, axis=0)])
        return c[n:] - c[:-n]

    mean = window_sums(x) / n
    variance = (window_sums(x * x) / n - mean * mean).sum(axis=1)
    variance[window_sums(bad.astype(np.float64)) > 0] = np.inf
    if not np.isfinite(variance).any():
        raise ValueError(f"No window of {n} frames without a non-finite position")
    start = int(np.argmin(variance))
    return slice(start, start + n)
