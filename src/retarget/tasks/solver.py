"""The IK solver protocol: what :func:`retarget.editing.fitting.fit_motion` asks of a solver.

Lee & Shin (1999, §5) solve each frame's constraints by IK, minimally displaced
from the reference pose; any solver that takes a frame set's
:class:`~retarget.tasks.constraints.Constraints` (turned into tasks by
:meth:`~retarget.tasks.constraints.Constraints.tasks` or read goal by goal) and
answers with poses fits: :class:`retarget.ik.numeric.NumericSolver` (§5.1),
:class:`retarget.ik.hybrid.HybridSolver` (§5.2).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from .._arrays import Array
from ..skeleton import Skeleton
from .constraints import Constraints

__all__ = ["IKSolver"]


class IKSolver(Protocol):
    """Poses meeting the constraints at some frames, minimally displaced from reference poses.

    Returns ``(root_position (N, 3), rotations (N, J, 4), determined (N, J + 1))``:
    ``determined[i, 0]`` says the root translation at frame i is the solver's
    answer, ``determined[i, 1 + j]`` the same of joint j's rotation. A joint the
    solver left alone because nothing constrains it there (a free leg) is not
    determined: its displacement at that frame is missing data for the
    B-spline, interpolated from the frames where it was solved, rather than
    pinned to zero.
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
        """Return root positions, rotations and the ``determined`` mask for the N ``frames``.

        ``spacing`` is the knot spacing of the level asking (0 for the exact pass).
        ``translations`` (N, J, 3): the frames' own joint offsets when the motion
        has them (:attr:`retarget.motion.Motion.translations`), else None.
        """
        ...
