"""Whether a reading of a body stands as a humanoid's: the check before a mapping is used.

Roles found wrong (a waist taken for the head, a trunk for the hips) or named wrong in
a ``--map`` file give a result that is wrong while the command succeeds; this module
says so first (:func:`implausible`), in words that name what was found. Two kinds of
check:

* **hierarchy** (any skeleton): each limb's joints one below the other (hip above
  knee above ankle, shoulder above elbow above wrist, in the tree); the hips above
  every limb; no limb inside another (a left knee in the right leg); the head and
  the neck outside the limbs (not a foot named the head);
* **rest pose**, where the rest pose stands (the body read from its shape,
  :func:`retarget.humanoid.anatomy.read_anatomy`, gives its up): the head above the
  hips, the feet under them (the ankles at least a fifth of the height below), each
  knee between its hip and its ankle, and the height the roles give (head to ankle,
  :func:`retarget.humanoid.roles.height`) at least two thirds of the body's own extent
  along up (:data:`_SHORT`; the H1 read with its torso as its head: 1.01 m of 1.8 m).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise

from ..core.kinematics import rest_pose
from ..core.skeleton import Skeleton
from .anatomy import read_anatomy
from .roles import Roles, height

__all__ = ["implausible"]

#: The height the roles give (head to ankles) is at least this share of the body's extent
#: at rest: 0.85 to 0.95 on the rigs and robots of the tests, 0.56 on the H1 read with
#: its torso's hinge (at its pelvis) for its head.
_SHORT = 0.65

_LIMBS = (
    ("leg", ("hip", "knee", "ankle")),
    ("arm", ("shoulder", "elbow", "wrist")),
)


def _below(skeleton: Skeleton, point: int, top: int) -> bool:
    """Whether ``point`` is ``top`` or under it in the tree."""
    return top in skeleton.chain(point)


def implausible(skeleton: Skeleton, roles: Mapping[str, int]) -> list[str]:
    """What does not stand as a humanoid's in ``roles`` (role → point) of ``skeleton``
    (module docstring), one phrase each, naming the points; empty when all does."""
    names = skeleton.point_names
    said: list[str] = []

    def n(role: str) -> str:
        return f"{role} ({names[roles[role]]})"

    hips = roles.get("hips")
    tops: dict[str, int] = {}
    for side in ("left", "right"):
        for kind, chain in _LIMBS:
            have = [r for r in chain if f"{side}_{r}" in roles]
            for upper, lower in pairwise(have):
                a, b = f"{side}_{upper}", f"{side}_{lower}"
                if roles[a] == roles[b] or not _below(skeleton, roles[b], roles[a]):
                    said.append(f"{n(b)} is not below {n(a)} in the hierarchy")
            if have:
                tops[f"{side} {kind}"] = roles[f"{side}_{have[0]}"]
    if hips is not None:
        for limb, top in tops.items():
            if not _below(skeleton, top, hips) or top == hips:
                said.append(
                    f"the {limb} ({names[top]}) does not hang from the hips ({names[hips]})"
                )
    for limb, top in tops.items():
        for other, top2 in tops.items():
            if limb != other and top != top2 and _below(skeleton, top2, top):
                said.append(f"the {other} ({names[top2]}) is inside the {limb} ({names[top]})")
    for role in ("head", "neck"):
        if role not in roles:
            continue
        for limb, top in tops.items():
            if _below(skeleton, roles[role], top):
                said.append(f"the {n(role)} is in the {limb}, below {names[top]}")
    if said or hips is None or "head" not in roles:
        return said
    body = read_anatomy(skeleton)
    if body is None:  # a rest pose that does not stand: the hierarchy alone
        return said
    pos = rest_pose(skeleton)[0]
    h = pos @ body.up
    extent = float(h.max() - h.min())
    if h[roles["head"]] <= h[hips]:
        said.append(f"the {n('head')} is not above the {n('hips')} at rest")
    for side in ("left", "right"):
        ankle, knee, hip = (roles.get(f"{side}_{r}") for r in ("ankle", "knee", "hip"))
        if ankle is None or knee is None or hip is None:
            continue
        if h[hips] - h[ankle] < 0.2 * extent:
            said.append(f"the {n(side + '_ankle')} is not under the {n('hips')} at rest")
        elif not min(h[hip], h[ankle]) - 0.02 * extent <= h[knee] <= max(h[hip], h[ankle]):
            said.append(f"the {n(side + '_knee')} is not between its hip and ankle at rest")
    if not said:
        tall = height(skeleton, Roles(points=dict(roles), spine=()))
        if tall < _SHORT * extent:
            said.append(
                f"the head to the ankles measure {tall:.3g} {skeleton.unit or 'units'}, "
                f"under {_SHORT:.0%} of the body's {extent:.3g} at rest "
                f"(is the {n('head')} the head?)"
            )
    return said
