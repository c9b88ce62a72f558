"""The hierarchy of a skeleton read as a body: main chains, common ancestors, mirror twins.

Small pure functions over a :class:`~retarget.core.skeleton.Skeleton`'s points (joints,
then end sites) that the role finders share (:mod:`retarget.humanoid.anatomy`,
:mod:`retarget.humanoid.roles`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.skeleton import Skeleton

__all__ = ["children_of", "common_ancestor", "main_chain", "mirror_pairs"]


def children_of(skeleton: Skeleton) -> list[list[int]]:
    """Each point's child points, in index order."""
    kids: list[list[int]] = [[] for _ in range(skeleton.num_points)]
    for p in range(1, skeleton.num_points):
        kids[int(skeleton.point_parents[p])].append(p)
    return kids


def main_chain(skeleton: Skeleton, top: int) -> list[int]:
    """From ``top`` down, always into the child with the longest sub-chain (points);
    between children of equal reach, the one going on most straight (a hand's end
    rather than a thumb beside it of the same length)."""
    parents = skeleton.point_parents
    offsets = skeleton.point_offsets
    lengths = skeleton.bone_lengths()
    kids: list[list[int]] = [[] for _ in range(skeleton.num_points)]
    reach = np.zeros(skeleton.num_points)  # longest bone path below each point
    for p in range(skeleton.num_points - 1, 0, -1):
        a = parents[p]
        kids[a].insert(0, p)
        reach[a] = max(reach[a], reach[p] + lengths[p])

    def longest(among: list[int]) -> list[int]:
        total = [reach[c] + lengths[c] for c in among]
        return [c for c, t in zip(among, total, strict=True) if t >= max(total) * (1 - 1e-9)]

    def straightness(c: int, incoming: NDArray[np.float64]) -> float:
        """Cosine of the first non-zero step from the parent into ``c``'s sub-chain
        with the bone into the parent."""
        step, k = offsets[c], c
        while not step.any() and kids[k]:
            k = longest(kids[k])[0]
            step = offsets[k]
        norm = float(np.linalg.norm(step) * np.linalg.norm(incoming))
        return float(step @ incoming) / norm if norm > 0 else -1.0

    chain = [top]
    while kids[chain[-1]]:
        ties = longest(kids[chain[-1]])
        incoming = offsets[chain[-1]]
        chain.append(max(ties, key=lambda c: straightness(c, incoming)))
    return chain


def common_ancestor(skeleton: Skeleton, points: Sequence[int]) -> int:
    """The deepest point whose subtree holds all ``points``."""
    chains = [skeleton.chain(p) for p in points]
    k = 0
    while all(len(c) > k + 1 for c in chains) and len({int(c[k + 1]) for c in chains}) == 1:
        k += 1
    return int(chains[0][k])


def mirror_pairs(skeleton: Skeleton) -> list[tuple[int, int]]:
    """Pairs of sibling joints with subtrees of one shape and 3+ points on their main
    chains (limbs), shallowest first; none is looked for inside a pair."""
    kids: list[list[int]] = [[] for _ in range(skeleton.num_points)]
    for p in range(1, skeleton.num_points):
        kids[skeleton.point_parents[p]].append(p)
    shapes: dict[tuple[int, ...], int] = {}
    shape = [0] * skeleton.num_points
    for p in range(skeleton.num_points - 1, -1, -1):
        shape[p] = shapes.setdefault(tuple(sorted(shape[c] for c in kids[p])), len(shapes))
    pairs: list[tuple[int, int]] = []
    todo = [0]
    for j in todo:  # breadth first: by depth
        for c in kids[j]:
            twins = [d for d in kids[j] if shape[d] == shape[c]]
            if len(twins) == 2 and len(main_chain(skeleton, c)) >= 3:
                if c == twins[0]:
                    pairs.append((twins[0], twins[1]))
            else:
                todo.append(c)
    return pairs
