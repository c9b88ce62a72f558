"""Motion: a skeleton animated over frames, and displacement maps on it.

A pose is ``(root_position (3,), rotations (J, 4))``; a motion stacks ``F`` of
them at ``fps`` frames per second. Every pose lives on the manifold
R³ × (S³)ᴶ and moves in **one tangent space** (DESIGN.md, idea 1): a tangent
vector ``x`` has shape ``(..., 3 + 3J)``, ``x[..., :3]`` the root translation and
``x[..., 3 + 3j : 6 + 3j]`` the rotation vector of joint ``j``, applied in the
joint's local frame (on the right). Lee & Shin 1999, eq. (1):

.. math::
    m ⊕ d = (p + v_0,\\ q_1 \\exp(v_1), …, q_J \\exp(v_J)), \\qquad
    m ⊖ m_0 = (p - p_0,\\ \\log(q_{0,1}^{-1} q_1), …)

Successive displacements are composed by applying ⊕ again, never by adding
rotation vectors (``exp(a) exp(b) ≠ exp(a + b)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from . import quat
from .arrays import Array, frozen
from .errors import RetargetError
from .skeleton import Skeleton

__all__ = [
    "Motion",
    "concatenate",
    "frame_slice",
    "ominus",
    "ominus_joints",
    "oplus",
    "oplus_joints",
    "tangent_size",
]


def tangent_size(num_joints: int) -> int:
    """Length ``3 + 3J`` of a tangent vector for ``J`` joints."""
    return 3 + 3 * num_joints


def _split_tangent(x: Array, num_joints: int) -> tuple[Array, Array]:
    if x.shape[-1] != tangent_size(num_joints):
        raise ValueError(
            f"Expected tangent vectors of shape (..., {tangent_size(num_joints)}) for "
            f"{num_joints} joints, got {x.shape}"
        )
    return x[..., :3], x[..., 3:].reshape(*x.shape[:-1], num_joints, 3)


def oplus(root_position: ArrayLike, rotations: ArrayLike, x: ArrayLike) -> tuple[Array, Array]:
    """Pose ⊕ tangent vector (Lee & Shin 1999, eq. 1).

    Parameters
    ----------
    root_position : array_like, shape (..., 3)
    rotations : array_like, shape (..., J, 4)
        Local joint rotations.
    x : array_like, shape (..., 3 + 3J)
        Root translation, then one rotation vector per joint (local frame).

    Returns
    -------
    root_position : ndarray, shape (..., 3)
        ``p + x[:3]``.
    rotations : ndarray, shape (..., J, 4)
        ``q_j ⊗ exp(v_j)``.
    """
    rotations = np.asarray(rotations, dtype=np.float64)
    v0, v = _split_tangent(np.asarray(x, dtype=np.float64), rotations.shape[-2])
    return np.asarray(root_position, np.float64) + v0, quat.multiply(rotations, quat.exp(v))


def ominus(
    root_position: ArrayLike,
    rotations: ArrayLike,
    root_position0: ArrayLike,
    rotations0: ArrayLike,
) -> Array:
    """Pose ⊖ reference pose: the tangent vector ``x`` with ``ref ⊕ x = pose``.

    Parameters
    ----------
    root_position, root_position0 : array_like, shape (..., 3)
    rotations, rotations0 : array_like, shape (..., J, 4)

    Returns
    -------
    ndarray, shape (..., 3 + 3J)
        ``(p - p0, log(q0_1⁻¹ q_1), …)``, rotation vectors on the shortest arc.
    """
    rotations = np.asarray(rotations, dtype=np.float64)
    v0 = np.asarray(root_position, np.float64) - np.asarray(root_position0, np.float64)
    v = quat.log(quat.multiply(quat.conjugate(rotations0), rotations))
    v0, v = np.broadcast_arrays(v0[..., None, :], v)
    return np.concatenate([v0[..., 0, :], v.reshape(*v.shape[:-2], -1)], axis=-1)


def oplus_joints(rotations: ArrayLike, v: ArrayLike, joints: ArrayLike) -> Array:
    """⊕ on a subset of joints: ``q_j ⊗ exp(v_j)`` for the ``joints``, the others unchanged.

    The rotation part of :func:`oplus` (Lee & Shin 1999, eq. 1) for a state
    that moves only some joints (an IK's free joints, a filter's moved DOFs).

    Parameters
    ----------
    rotations : array_like, shape (..., J, 4)
        Local joint rotations.
    v : array_like, shape (..., K, 3), or (..., 3) for one joint
        Rotation vectors (radians, each joint's local frame).
    joints : int or array_like of int, shape (K,)
        The joints they turn.

    Returns
    -------
    ndarray, shape (..., J, 4)
        A new array; the batch axes of ``rotations`` and ``v`` broadcast.
    """
    q = np.asarray(rotations, dtype=np.float64)
    turn = np.asarray(v, dtype=np.float64)
    index = np.asarray(joints)
    batch = np.broadcast_shapes(q.shape[:-2], turn.shape[: turn.ndim - 1 - index.ndim])
    out = np.array(np.broadcast_to(q, (*batch, *q.shape[-2:])))
    out[..., index, :] = quat.multiply(out[..., index, :], quat.exp(turn))
    return out


def ominus_joints(rotations: ArrayLike, rotations0: ArrayLike, joints: ArrayLike) -> Array:
    """⊖ on a subset of joints: ``log(q0_j⁻¹ ⊗ q_j)`` for the ``joints`` (eq. 1).

    Parameters
    ----------
    rotations, rotations0 : array_like, shape (..., J, 4)
        Local joint rotations and the reference ones (leading axes broadcast).
    joints : int or array_like of int, shape (K,)

    Returns
    -------
    ndarray, shape (..., K, 3), or (..., 3) for one joint
        Rotation vectors on the shortest arc, with
        ``oplus_joints(rotations0, result, joints)`` equal to ``rotations`` there.
    """
    index = np.asarray(joints)
    q = np.asarray(rotations, dtype=np.float64)[..., index, :]
    q0 = np.asarray(rotations0, dtype=np.float64)[..., index, :]
    return quat.log(quat.multiply(quat.conjugate(q0), q))


@dataclass(frozen=True, eq=False)
class Motion:
    """An immutable animated skeleton.

    Parameters
    ----------
    skeleton : Skeleton
    root_position : array_like, shape (F, 3)
        World position of the root joint, in ``skeleton.unit``.
    rotations : array_like, shape (F, J, 4)
        Local rotations (w, x, y, z); joint 0's is the root orientation.
        Normalised on construction.
    fps : float
        Frames per second.
    translations : array_like, shape (F, J, 3), optional
        Per-frame local offsets, for files whose non-root joints carry animated
        position channels, or a character whose proportions change over the
        clip (character morphing); ``None`` (the usual case) means
        ``skeleton.offsets``.
    """

    skeleton: Skeleton
    root_position: Array
    rotations: Array
    fps: float
    translations: Array | None = None

    def __post_init__(self) -> None:
        self._check()

    @classmethod
    def at_rest(cls, skeleton: Skeleton, *, frames: int = 1, fps: float = 30.0) -> Motion:
        """``frames`` frames of the skeleton at rest: the root at its offset, every local
        rotation the identity (a character's rest pose as a file, a warm-up frame).

        Examples
        --------
        >>> sk = Skeleton(("a", "b"), np.array([-1, 0]), np.array([[0.0, 1, 0], [0, 2, 0]]))
        >>> Motion.at_rest(sk).root_position.tolist()
        [[0.0, 1.0, 0.0]]
        """
        rotations = np.zeros((frames, skeleton.num_joints, 4))
        rotations[..., 0] = 1.0
        root = np.repeat(np.asarray(skeleton.offsets[:1], dtype=np.float64), frames, axis=0)
        return cls._adopt(skeleton, root, rotations, fps)

    @classmethod
    def _adopt(
        cls,
        skeleton: Skeleton,
        root_position: Array,
        rotations: Array,
        fps: float,
        translations: Array | None = None,
    ) -> Motion:
        """A motion around arrays that a trusted producer has just made and hands
        over: finite float64 values and unit quaternions, by construction.
        Shapes are checked; values are neither copied nor renormalised."""
        motion = object.__new__(cls)
        n = rotations.shape[0]
        expect = {
            "root_position": (root_position, (n, 3)),
            "rotations": (rotations, (n, skeleton.num_joints, 4)),
            "translations": (translations, (n, skeleton.num_joints, 3)),
        }
        for key, (arr, shape) in expect.items():
            if arr is not None:
                if arr.shape != shape or arr.dtype != np.float64:
                    raise ValueError(f"Expected `{key}` of shape {shape}, got {arr.shape}")
                arr.setflags(write=False)
            object.__setattr__(motion, key, arr)
        object.__setattr__(motion, "skeleton", skeleton)
        object.__setattr__(motion, "fps", float(fps))
        return motion

    def _check(self) -> None:
        """Validate the fields; keep read-only copies of the arrays."""
        rotations = np.asarray(self.rotations, dtype=np.float64)
        if rotations.ndim != 3 or rotations.shape[1:] != (self.skeleton.num_joints, 4):
            raise ValueError(
                f"Expected `rotations` of shape (F, {self.skeleton.num_joints}, 4), "
                f"got {rotations.shape}"
            )
        n = rotations.shape[0]
        norm2 = np.einsum("fji,fji->fj", rotations, rotations)
        if not (np.isfinite(norm2).all() and (norm2 > 1e-12).all()):
            raise ValueError("`rotations` contains zero, NaN or infinite quaternions")
        # rescale only what is off unit length, so unit input stays bit-identical
        scale = np.where(np.abs(norm2 - 1.0) > 1e-14, 1.0 / np.sqrt(norm2), 1.0)
        rotations = rotations * scale[..., None]  # a fresh array nobody else holds
        rotations.setflags(write=False)
        object.__setattr__(self, "rotations", rotations)
        object.__setattr__(
            self, "root_position", frozen(self.root_position, (n, 3), "root_position", finite=True)
        )
        fps = float(self.fps)
        if not (np.isfinite(fps) and fps > 0):
            raise ValueError(f"Expected fps > 0, got {self.fps}")
        object.__setattr__(self, "fps", fps)
        if self.translations is not None:
            shape = (n, self.skeleton.num_joints, 3)
            object.__setattr__(
                self, "translations", frozen(self.translations, shape, "translations", finite=True)
            )

    # -- sizes --------------------------------------------------------------------------
    @property
    def num_frames(self) -> int:
        """F."""
        return self.rotations.shape[0]

    def __len__(self) -> int:
        return self.num_frames

    @property
    def duration(self) -> float:
        """Seconds from the first frame to the last, ``(F - 1) / fps``."""
        return max(self.num_frames - 1, 0) / self.fps

    @property
    def times(self) -> Array:
        """Time of every frame in seconds, shape (F,)."""
        return np.arange(self.num_frames) / self.fps

    def replace(self, **changes: object) -> Motion:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    # -- frames -------------------------------------------------------------------------
    def __getitem__(self, frames: slice | ArrayLike) -> Motion:
        """Frames selected by a slice or an index array (a new motion).

        A slice with a step keeps ``fps / step`` frames per second.
        """
        fps = self.fps
        if isinstance(frames, slice):
            step = frames.step or 1
            if step <= 0:
                raise ValueError("Expected a positive slice step")
            fps = self.fps / step
        else:
            frames = np.asarray(frames)
            if frames.ndim != 1:
                raise ValueError("Expected a slice or a 1-D array of frame indices")
        return Motion(
            self.skeleton,
            self.root_position[frames],
            self.rotations[frames],
            fps,
            None if self.translations is None else self.translations[frames],
        )

    def resample(self, fps: float) -> Motion:
        """The same motion sampled at another frame rate.

        Rotations are interpolated by slerp, positions linearly; the new frames
        are ``k / fps`` seconds for ``k = 0 .. floor(duration · fps)``.
        """
        fps = float(fps)
        if not (np.isfinite(fps) and fps > 0):
            raise ValueError(f"Expected fps > 0, got {fps}")
        count = int(np.floor(self.duration * fps + 1e-9)) + 1
        t = np.arange(count) * (self.fps / fps)  # in source frames
        i0 = np.minimum(np.floor(t).astype(np.intp), self.num_frames - 1)
        i1 = np.minimum(i0 + 1, self.num_frames - 1)
        a = (t - i0)[:, None]
        rot = quat.unroll(self.rotations, axis=0)
        rotations = quat.slerp(rot[i0], rot[i1], a)
        root = (1 - a) * self.root_position[i0] + a * self.root_position[i1]
        trans = None
        if self.translations is not None:
            trans = (1 - a[..., None]) * self.translations[i0] + a[..., None] * self.translations[
                i1
            ]
        return Motion(self.skeleton, root, rotations, fps, trans)

    # -- displacement maps (Lee & Shin 1999, eq. 1) ---------------------------------------
    def displace(self, d: ArrayLike) -> Motion:
        """``self ⊕ d`` for a displacement map ``d`` of shape (F, 3 + 3J) (or (3 + 3J,))."""
        root, rot = oplus(self.root_position, self.rotations, d)
        return self.replace(
            root_position=np.broadcast_to(root, self.root_position.shape), rotations=rot
        )

    def displacement(self, reference: Motion) -> Array:
        """``self ⊖ reference``: the map ``d`` (F, 3 + 3J) with ``reference ⊕ d == self``."""
        if (
            reference.num_frames != self.num_frames
            or reference.skeleton.num_joints != self.skeleton.num_joints
        ):
            raise ValueError("Displacement needs motions of equal frame and joint counts")
        return ominus(
            self.root_position, self.rotations, reference.root_position, reference.rotations
        )

    def __repr__(self) -> str:
        return (
            f"Motion({self.num_frames} frames at {self.fps:g} fps, "
            f"{self.skeleton.num_joints} joints, unit={self.skeleton.unit!r})"
        )


def concatenate(motions: Sequence[Motion]) -> Motion:
    """Motions of one skeleton and frame rate, one after the other."""
    if not motions:
        raise ValueError("Nothing to concatenate")
    first = motions[0]
    for m in motions[1:]:
        if m.skeleton is not first.skeleton and (
            m.skeleton.names != first.skeleton.names
            or not np.array_equal(m.skeleton.offsets, first.skeleton.offsets)
        ):
            raise ValueError("Concatenated motions must share one skeleton")
        if not np.isclose(m.fps, first.fps):
            raise ValueError(
                f"Concatenated motions must share one fps, got {first.fps} and {m.fps}"
            )
    has_t = [m.translations is not None for m in motions]
    trans = None
    if any(has_t):
        trans = np.concatenate(
            [
                m.translations
                if m.translations is not None
                else np.broadcast_to(
                    first.skeleton.offsets, (m.num_frames, *first.skeleton.offsets.shape)
                )
                for m in motions
            ]
        )
    return Motion(
        first.skeleton,
        np.concatenate([m.root_position for m in motions]),
        np.concatenate([m.rotations for m in motions]),
        first.fps,
        trans,
    )


def frame_slice(spec: str | slice | None, count: int) -> slice:
    """The frames ``A:B`` of a clip of ``count`` (Python slice semantics, either side
    optional; the command line's ``--frames``) as a slice, refused when it selects none.

    Examples
    --------
    >>> frame_slice("100:", 300), frame_slice(":-10", 300)
    (slice(100, None, None), slice(None, -10, None))
    """
    if spec is None or spec == "":
        return slice(None)
    if isinstance(spec, slice):
        chosen, text = spec, f"{spec.start}:{spec.stop}"
    else:
        parts = spec.split(":")
        if len(parts) != 2:
            raise RetargetError(f"--frames expects A:B (e.g. 100:400), got {spec!r}")
        try:
            a, b = (int(p) if p.strip() else None for p in parts)
        except ValueError:
            raise RetargetError(f"--frames expects whole numbers A:B, got {spec!r}") from None
        chosen, text = slice(a, b), spec
    if len(range(count)[chosen]) == 0:
        raise RetargetError(f"--frames {text} selects no frame of {count}")
    return chosen
