"""Target characters: a skeleton with its segments rescaled, and one morphing over a clip.

A scale factor applies to the bone *ending* at a joint (DESIGN.md, "Target
characters"): ``thigh`` to the bone ending at each knee, ``shin`` at each
ankle, ``upper_arm`` at each elbow, ``forearm`` at each wrist, and ``other`` to
every remaining bone (spine, neck, head, clavicles, hips, feet, hands, end
sites). The root's rest position is scaled by the resulting height ratio.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from ..core.arrays import Array
from ..core.errors import RetargetError
from ..core.skeleton import Skeleton
from .roles import find_roles, height

__all__ = ["PRESETS", "SEGMENTS", "make_character", "morph_translations"]

SEGMENTS = ("thigh", "shin", "upper_arm", "forearm", "other")
_SEGMENT_END = {"thigh": "knee", "shin": "ankle", "upper_arm": "elbow", "forearm": "wrist"}

PRESETS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        # short non-uniform legs, long torso (Choi & Ko 2000, Table 1 ratios)
        "blubby": MappingProxyType(
            {"thigh": 0.57, "shin": 0.74, "upper_arm": 0.8, "forearm": 0.8, "other": 1.15}
        ),
        # long limbs, short torso
        "sally": MappingProxyType(
            {"thigh": 1.35, "shin": 1.2, "upper_arm": 1.3, "forearm": 1.4, "other": 0.9}
        ),
    }
)


def make_character(
    skeleton: Skeleton,
    scales: Mapping[str, float] | None = None,
    *,
    preset: str | None = None,
    uniform: float = 1.0,
) -> Skeleton:
    """A character built from ``skeleton`` by segment scale factors.

    Parameters
    ----------
    skeleton : Skeleton
        The model (usually the source motion's skeleton).
    scales : mapping of str to float, optional
        Factors for the keys of :data:`SEGMENTS` (missing keys mean 1).
    preset : str, optional
        A name from :data:`PRESETS` (``"blubby"``, ``"sally"``) instead of ``scales``.
    uniform : float
        A further factor on every bone.

    Returns
    -------
    Skeleton
        Same names, hierarchy and channels; new offsets.

    Raises
    ------
    RetargetError
        For an unknown preset or segment name, or a non-positive factor.
    """
    if preset is not None:
        if scales is not None:
            raise RetargetError("give either a preset or scales, not both")
        if preset not in PRESETS:
            raise RetargetError(
                f"unknown character preset {preset!r}; presets: {', '.join(PRESETS)}"
            )
        scales = PRESETS[preset]
    scales = dict(scales or {})
    unknown = set(scales) - set(SEGMENTS)
    if unknown:
        raise RetargetError(f"unknown segments {sorted(unknown)}; segments: {', '.join(SEGMENTS)}")
    factors = [uniform, *scales.values()]
    if not all(np.isfinite(f) and f > 0 for f in factors):
        raise RetargetError(f"scale factors must be positive, got {scales} and uniform={uniform}")
    per_point = np.full(skeleton.num_points, scales.get("other", 1.0))
    if set(scales) - {"other"}:
        roles = find_roles(skeleton)
        for segment, end in _SEGMENT_END.items():
            for side in ("left", "right"):
                per_point[roles[f"{side}_{end}"]] = scales.get(segment, 1.0)
    per_point *= uniform
    offsets = skeleton.point_offsets * per_point[:, None]
    joints = skeleton.num_joints
    target = skeleton.replace(offsets=offsets[:joints], site_offsets=offsets[joints:])
    try:
        ratio = height(target) / height(skeleton)
    except (RetargetError, KeyError):
        ratio = float(np.median(per_point))
    new_offsets = target.offsets.copy()
    new_offsets[0] = skeleton.offsets[0] * ratio
    return target.replace(offsets=new_offsets)


def morph_translations(start: Skeleton, end: Skeleton, num_frames: int) -> Array:
    """Per-frame joint offsets of a character morphing from ``start`` to ``end``.

    .. math:: o_j(t) = (1 − s(t))\\, A_j + s(t)\\, B_j, \\qquad s(t) = t / (F − 1)

    linear in time, from ``start``'s offsets ``A`` at the first frame to
    ``end``'s ``B`` at the last (Lee & Shin 1999, §6, Figure 5d: "the size of a
    character smoothly changes").

    Parameters
    ----------
    start, end : Skeleton
        The same joints (by name) with the same parents; ``end`` may list them
        in another order. Their end sites are not interpolated (BVH cannot
        animate them): a motion with these offsets keeps ``start``'s.
    num_frames : int
        F.

    Returns
    -------
    ndarray, shape (F, J, 3)
        In ``start``'s joint order and unit: the ``translations`` of
        :func:`hierarchical_retarget` with ``target=start``.

    Raises
    ------
    RetargetError
        When the joints or their parents differ, naming them.
    """
    missing = sorted(set(start.names) - set(end.names))
    extra = sorted(set(end.names) - set(start.names))
    if missing or extra:
        raise RetargetError(
            f"the morph's characters have different joints: the last lacks {missing[:8]}, "
            f"has extra {extra[:8]}"
        )
    order = end.indices(start.names)
    parent_names = [start.names[p] if p >= 0 else None for p in start.parents]
    end_parents = [end.names[p] if p >= 0 else None for p in end.parents[order]]
    moved = [n for n, a, b in zip(start.names, parent_names, end_parents, strict=True) if a != b]
    if moved:
        raise RetargetError(
            f"the morph's characters have different hierarchies: joints {moved[:8]} have "
            "other parents"
        )
    if num_frames < 0:
        raise ValueError(f"Expected num_frames >= 0, got {num_frames}")
    s = np.linspace(0.0, 1.0, num_frames) if num_frames > 1 else np.zeros(num_frames)
    # A + s (B − A): exactly A where s = 0, and everywhere when A = B
    return start.offsets + s[:, None, None] * (end.offsets[order] - start.offsets)
