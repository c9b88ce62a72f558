"""The IK solver protocol: what :func:`retarget.editing.fitting.fit_motion` asks of a solver.

Lee & Shin (1999, §5) solve each frame's constraints by IK, minimally displaced
from the reference pose; any solver that takes a frame set's
:class:`~retarget.tasks.constraints.Constraints` (turned into tasks by
:meth:`~retarget.tasks.constraints.Constraints.tasks` or read goal by goal) and
answers with poses fits: :class:`retarget.ik.numeric.NumericSolver` (§5.1),
:class:`retarget.ik.hybrid.HybridSolver` (§5.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ..core.arrays import Array
from ..core.kinematics import Pose
from ..core.skeleton import Skeleton
from .constraints import Constraints

__all__ = ["IKFrames", "IKSolver"]


@dataclass(frozen=True, eq=False)
class IKFrames:
    """What a solver is asked: N frames' reference poses and the constraints on them.

    ``skeleton``, ``root_position`` (N, 3), ``rotations`` (N, J, 4) and ``translations``
    (N, J, 3) or None are those of a :class:`~retarget.core.motion.Motion` at the N ``frames``
    (ints, the clip's frames ``constraints`` is indexed by): the reference poses, from
    which the answer is minimally displaced. ``spacing``: the knot spacing of the fitting
    level asking (0 for the exact pass, None for a lone solve).
    """

    skeleton: Skeleton
    root_position: Array
    rotations: Array
    frames: NDArray[np.intp]
    constraints: Constraints
    spacing: float | None = None
    translations: Array | None = None

    def reference(self) -> Pose:
        """The reference poses (with the frames' own offsets)."""
        return Pose.of(self.skeleton, self.root_position, self.rotations, self.translations)

    def take(self, which: NDArray[np.bool_]) -> IKFrames:
        """The same question at the frames ``which`` (N,) selects."""
        return IKFrames(
            self.skeleton,
            self.root_position[which],
            self.rotations[which],
            self.frames[which],
            self.constraints,
            self.spacing,
            None if self.translations is None else self.translations[which],
        )


class IKSolver(Protocol):
    """Poses meeting the constraints at some frames, minimally displaced from reference poses.

    Returns ``(root_position (N, 3), rotations (N, J, 4), determined (N, J + 1))``:
    ``determined[i, 0]`` says the root translation at frame i is the solver's
    answer, ``determined[i, 1 + j]`` the same of joint j's rotation. A joint the
    solver left alone because nothing constrains it there (a free leg) is not
    determined: its displacement at that frame is missing data for the
    B-spline, interpolated from the frames where it was solved, rather than
    pinned to zero.

    A solver implements :meth:`solve`; subclassing this protocol gives it the call
    with the question's parts as arguments.
    """

    def __call__(
        self,
        skeleton: Skeleton,
        root_position: Array,
        rotations: Array,
        frames: NDArray[np.intp],
        constraints: Constraints,
        *,
        spacing: float | None = None,
        translations: Array | None = None,
    ) -> tuple[Array, Array, NDArray[np.bool_]]:
        """Return root positions, rotations and the ``determined`` mask for the N ``frames``
        (the arguments are the fields of :class:`IKFrames`)."""
        q = IKFrames(skeleton, root_position, rotations, frames, constraints, spacing, translations)
        return self.solve(q)

    def solve(self, q: IKFrames) -> tuple[Array, Array, NDArray[np.bool_]]:
        """Root positions, rotations and the ``determined`` mask answering ``q``."""
        ...
