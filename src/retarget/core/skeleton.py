"""The skeleton: an immutable tree of joints and end sites.

Joints are ordered parents before children (``parents[j] < j``, root = 0).
End sites (BVH "End Site", ASF leaf-bone tips) have no rotation of their own;
they are kept so files round-trip and serve as end-effectors. Wherever a joint
*or* a site may be meant, the library speaks of **points**: indices ``0..J-1``
are the joints and ``J..J+S-1`` the sites, in that order, so every point's
parent comes before it.

A joint's local rotation is ``A ⊗ E(angles) ⊗ A⁻¹`` where ``E`` is the Euler
rotation of its channels (BVH convention, see :mod:`retarget.core.quat`) and ``A`` is
a fixed *axis* rotation: identity for BVH, the ASF ``axis`` for ASF skeletons.
Rotation channels missing from a joint (ASF ``dof rx`` knees) are the axes it
cannot turn about; :attr:`Skeleton.dof_mask` says which are free and
:attr:`Skeleton.limits` bounds their angles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .arrays import frozen
from .errors import UnknownJointError

__all__ = ["CHANNEL_NAMES", "UP_AXES", "Skeleton"]

CHANNEL_NAMES = (
    "Xposition",
    "Yposition",
    "Zposition",
    "Xrotation",
    "Yrotation",
    "Zrotation",
)
ROOT_CHANNELS = ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation")
JOINT_CHANNELS = ("Zrotation", "Yrotation", "Xrotation")
#: The world up axes a skeleton may record (:attr:`Skeleton.up`).
UP_AXES = ("x", "y", "z", "-x", "-y", "-z")


@dataclass(frozen=True, eq=False)
class Skeleton:
    """An immutable joint hierarchy.

    Parameters
    ----------
    names : sequence of str, length J
        Joint names, unique (together with ``site_names``).
    parents : array_like of int, shape (J,)
        ``parents[0] == -1`` and ``parents[j] < j``.
    offsets : array_like, shape (J, 3)
        Each joint's position in its parent's frame at rest (the root's is its
        rest position; the root's position channels replace it when animated).
    channels : sequence of tuples of str, length J, optional
        Per joint, the channel layout in file order, names from
        :data:`CHANNEL_NAMES`. Rotation channels in file order give the Euler
        order. Default: 6 channels (position, ZYX) on the root, ZYX elsewhere.
    site_names : sequence of str, length S
    site_parents : array_like of int, shape (S,)
        The joint each end site hangs from.
    site_offsets : array_like, shape (S, 3)
    unit : str
        Length unit of offsets and positions, e.g. ``"cm"``, ``"m"``, ``"in"``.
    axes : array_like, shape (J, 4), optional
        Fixed rotation of each joint's channel frame (ASF ``axis``); identity by default.
    limits : array_like, shape (J, 3, 2), optional
        Lower and upper bound (radians) of the Euler angle about x, y, z of each
        joint's channel frame; ``±inf`` where unbounded (the default).
    up : str, optional
        The world up axis of the file the skeleton came from, one of
        :data:`UP_AXES` (``"y"``, ``"-z"``, ...; ``"+y"`` is read as ``"y"``), as
        the readers find it from the body (:mod:`retarget.humanoid.world`); ``None``:
        not recorded, found from the frames (or the rest pose) when asked.
    """

    names: tuple[str, ...]
    parents: NDArray[np.intp]
    offsets: NDArray[np.float64]
    channels: tuple[tuple[str, ...], ...] = ()
    site_names: tuple[str, ...] = ()
    site_parents: NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, np.intp))
    site_offsets: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 3)))
    unit: str = "cm"
    # None asks for the defaults; __post_init__ always stores an array
    axes: NDArray[np.float64] = None  # type: ignore[assignment]
    limits: NDArray[np.float64] = None  # type: ignore[assignment]
    up: str | None = None

    def __post_init__(self) -> None:
        names = tuple(str(n) for n in self.names)
        n_joints = len(names)
        if n_joints == 0:
            raise ValueError("A skeleton needs at least one joint")
        parents = frozen(self.parents, (n_joints,), "parents", dtype=np.intp)
        if (
            parents[0] != -1
            or np.any(parents[1:] < 0)
            or np.any(parents[1:] >= np.arange(1, n_joints))
        ):
            raise ValueError("Expected parents[0] == -1 and 0 <= parents[j] < j for j > 0")
        offsets = frozen(self.offsets, (n_joints, 3), "offsets", dtype=np.float64)
        channels = tuple(tuple(c) for c in self.channels) or (
            ROOT_CHANNELS,
            *([JOINT_CHANNELS] * (n_joints - 1)),
        )
        if len(channels) != n_joints:
            raise ValueError(f"Expected {n_joints} channel layouts, got {len(channels)}")
        for name, chans in zip(names, channels, strict=True):
            if any(c not in CHANNEL_NAMES for c in chans) or len(set(chans)) != len(chans):
                raise ValueError(
                    f"Joint {name!r}: channels must be distinct names from {CHANNEL_NAMES}, "
                    f"got {chans}"
                )
        site_names = tuple(str(n) for n in self.site_names)
        n_sites = len(site_names)
        site_parents = frozen(self.site_parents, (n_sites,), "site_parents", dtype=np.intp)
        if np.any(site_parents < 0) or np.any(site_parents >= n_joints):
            raise ValueError("Expected every site parent to be a joint index")
        site_offsets = frozen(self.site_offsets, (n_sites, 3), "site_offsets", dtype=np.float64)
        all_names = names + site_names
        if len(set(all_names)) != len(all_names):
            dup = sorted({n for n in all_names if all_names.count(n) > 1})
            raise ValueError(f"Joint and site names must be unique; repeated: {dup}")
        if not (np.all(np.isfinite(offsets)) and np.all(np.isfinite(site_offsets))):
            raise ValueError("Offsets must be finite")
        axes = self.axes
        if axes is None:
            axes = np.tile([1.0, 0.0, 0.0, 0.0], (n_joints, 1))
        axes = frozen(axes, (n_joints, 4), "axes", dtype=np.float64)
        limits = self.limits
        if limits is None:
            limits = np.tile([-np.inf, np.inf], (n_joints, 3, 1))
        limits = frozen(limits, (n_joints, 3, 2), "limits", dtype=np.float64)
        if np.any(limits[..., 0] > limits[..., 1]):
            raise ValueError("Expected lower limits <= upper limits")
        up = self.up
        if up is not None:
            up = str(up).strip().lower().removeprefix("+")
            if up not in UP_AXES:
                raise ValueError(
                    f"Expected `up` to be one of {', '.join(UP_AXES)}, got {self.up!r}"
                )
        for key, value in [
            ("names", names),
            ("parents", parents),
            ("offsets", offsets),
            ("channels", channels),
            ("site_names", site_names),
            ("site_parents", site_parents),
            ("site_offsets", site_offsets),
            ("axes", axes),
            ("limits", limits),
            ("unit", str(self.unit)),
            ("up", up),
        ]:
            object.__setattr__(self, key, value)

    # -- sizes and points ---------------------------------------------------------
    @property
    def num_joints(self) -> int:
        """J, the number of joints (rotations per frame)."""
        return len(self.names)

    @property
    def num_sites(self) -> int:
        """S, the number of end sites."""
        return len(self.site_names)

    @property
    def num_points(self) -> int:
        """J + S."""
        return self.num_joints + self.num_sites

    @cached_property
    def point_names(self) -> tuple[str, ...]:
        """Joint names then site names, length J + S."""
        return self.names + self.site_names

    @cached_property
    def point_parents(self) -> NDArray[np.intp]:
        """Parents of joints then sites, shape (J + S,); -1 for the root."""
        out = np.concatenate([self.parents, self.site_parents])
        out.setflags(write=False)
        return out

    @cached_property
    def point_offsets(self) -> NDArray[np.float64]:
        """Offsets of joints then sites, shape (J + S, 3)."""
        out = np.concatenate([self.offsets, self.site_offsets])
        out.setflags(write=False)
        return out

    @cached_property
    def _index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.point_names)}

    def index(self, name: str | int) -> int:
        """Point index of a joint or site name (an int is checked and returned).

        Raises
        ------
        UnknownJointError
            Listing the names that exist.
        """
        if isinstance(name, (int, np.integer)):
            if not -self.num_points <= name < self.num_points:
                raise UnknownJointError(str(name), self.point_names)
            return int(name) % self.num_points
        try:
            return self._index[name]
        except KeyError:
            raise UnknownJointError(name, self.point_names) from None

    def indices(self, names: Sequence[str | int]) -> NDArray[np.intp]:
        """Point indices of several names, shape (len(names),)."""
        return np.array([self.index(n) for n in names], dtype=np.intp)

    def children(self, point: str | int) -> tuple[int, ...]:
        """Point indices whose parent is ``point``."""
        p = self.index(point)
        return tuple(int(c) for c in np.flatnonzero(self.point_parents == p))

    def chain(self, point: str | int) -> NDArray[np.intp]:
        """Point indices from the root down to ``point``, inclusive."""
        p = self.index(point)
        path = []
        while p >= 0:
            path.append(p)
            p = int(self.point_parents[p])
        return np.array(path[::-1], dtype=np.intp)

    @cached_property
    def depth(self) -> NDArray[np.intp]:
        """Depth of every point (root = 0), shape (J + S,)."""
        d = np.zeros(self.num_points, np.intp)
        for p in range(1, self.num_points):
            d[p] = d[self.point_parents[p]] + 1
        d.setflags(write=False)
        return d

    @cached_property
    def levels(self) -> tuple[NDArray[np.intp], ...]:
        """Point indices grouped by depth, shallowest first (for batched FK)."""
        return tuple(np.flatnonzero(self.depth == k) for k in range(int(self.depth.max()) + 1))

    # -- channels -------------------------------------------------------------------
    @cached_property
    def euler_orders(self) -> tuple[str, ...]:
        """Per joint, the rotation channels' axes in file order (e.g. ``"ZYX"``; ``""``)."""
        return tuple(
            "".join(c[0] for c in chans if c.endswith("rotation")) for chans in self.channels
        )

    @cached_property
    def dof_mask(self) -> NDArray[np.bool_]:
        """Which axes (x, y, z of the channel frame) each joint turns about, shape (J, 3)."""
        mask = np.array([[ax in order for ax in "XYZ"] for order in self.euler_orders])
        mask.setflags(write=False)
        return mask

    @cached_property
    def has_position_channels(self) -> NDArray[np.bool_]:
        """Which joints carry position channels, shape (J,)."""
        out = np.array([any(c.endswith("position") for c in chans) for chans in self.channels])
        out.setflags(write=False)
        return out

    @property
    def num_channels(self) -> int:
        """Total channel count of one frame."""
        return sum(len(c) for c in self.channels)

    # -- derived skeletons ---------------------------------------------------------
    def replace(self, **changes: object) -> Skeleton:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def scaled(self, factor: float) -> Skeleton:
        """Every offset multiplied by ``factor`` (a uniformly scaled character)."""
        return self.replace(offsets=self.offsets * factor, site_offsets=self.site_offsets * factor)

    def restricted(self, points: Sequence[str | int]) -> tuple[Skeleton, NDArray[np.intp]]:
        """The skeleton of the paths from the root to ``points``: the joints on them,
        in this skeleton's order, and the sites among ``points``, names kept.

        Forward kinematics of the result on ``rotations[..., joints, :]`` gives
        the same positions of ``points`` for a fraction of the joints (a
        measurement that only reads a few points, e.g. the feet).

        Returns
        -------
        skeleton : Skeleton
        joints : ndarray, shape (K,)
            This skeleton's index of each joint of the result.
        """
        chained = {int(q) for p in points for q in self.chain(p)}
        joints = np.array(sorted(q for q in chained if q < self.num_joints), dtype=np.intp)
        sites = np.array(sorted(q - self.num_joints for q in chained if q >= self.num_joints))
        sites = sites.astype(np.intp)
        renumber = np.full(self.num_joints, -1, dtype=np.intp)
        renumber[joints] = np.arange(len(joints))
        parents = self.parents[joints]
        sub = Skeleton(
            names=tuple(self.names[j] for j in joints),
            parents=np.where(parents >= 0, renumber[parents], -1),
            offsets=self.offsets[joints],
            channels=tuple(self.channels[j] for j in joints),
            site_names=tuple(self.site_names[k] for k in sites),
            site_parents=renumber[self.site_parents[sites]],
            site_offsets=self.site_offsets[sites],
            unit=self.unit,
            axes=self.axes[joints],
            limits=self.limits[joints],
            up=self.up,
        )
        return sub, joints

    def bone_lengths(self, translations: ArrayLike | None = None) -> NDArray[np.float64]:
        """Length of the bone ending at every point, shape (J + S,); 0 for the root.

        With per-frame joint offsets ``translations`` of shape (..., J, 3) (a
        character whose proportions change, :attr:`retarget.core.motion.Motion.translations`),
        shape (..., J + S): the joints' bones from them, the sites' from the skeleton.
        """
        offsets = self.point_offsets
        if translations is not None:
            t = np.asarray(translations, dtype=np.float64)
            sites = np.broadcast_to(self.site_offsets, (*t.shape[:-2], self.num_sites, 3))
            offsets = np.concatenate([t, sites], axis=-2)
        out = np.linalg.norm(offsets, axis=-1)
        out[..., 0] = 0.0
        return out

    @overload
    def path_length(self, a: str | int, b: str | int, translations: None = None) -> float: ...
    @overload
    def path_length(
        self, a: str | int, b: str | int, translations: ArrayLike
    ) -> NDArray[np.float64]: ...
    def path_length(
        self, a: str | int, b: str | int, translations: ArrayLike | None = None
    ) -> float | NDArray[np.float64]:
        """Sum of bone lengths along the tree path between two points (pose independent).

        A float; per frame, shape (...), for per-frame joint offsets ``translations``
        of shape (..., J, 3) (see :meth:`bone_lengths`).
        """
        ca, cb = list(self.chain(a)), list(self.chain(b))
        k = 0
        while k < min(len(ca), len(cb)) and ca[k] == cb[k]:
            k += 1
        lengths = self.bone_lengths(translations)
        total = lengths[..., ca[k:]].sum(axis=-1) + lengths[..., cb[k:]].sum(axis=-1)
        return float(total) if translations is None else total

    def __repr__(self) -> str:
        return (
            f"Skeleton({self.num_joints} joints, {self.num_sites} sites, unit={self.unit!r}, "
            f"root={self.names[0]!r})"
        )
