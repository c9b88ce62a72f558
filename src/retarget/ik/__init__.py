"""Inverse kinematics: analytic limbs (Lee & Shin 1999, section 5.3), numerical solvers.

:mod:`retarget.ik.limb`: closed-form two-bone limbs with the elbow-circle
(swivel) angle, batched over frames.

:mod:`retarget.ik.numeric`: penalties + batched nonlinear conjugate gradient
(section 5.1), on the tasks of :mod:`retarget.tasks`; the minimisers are
:mod:`retarget.core.optimize`'s.

:mod:`retarget.ik.newton`: the same penalty objective frame by frame by Gauss-Newton,
each frame from the last (compiled; a robot's hinges, its soles on the floor, its links
apart).

:mod:`retarget.ik.hybrid`: reduced coordinates with analytic limbs (section 5.2).

:mod:`retarget.ik.verbs` (on :mod:`retarget.ik.rbf`): example-based IK by blending
examples with a cardinal radial basis (Rose, Sloan & Cohen 2001); the shipped
verbs in :mod:`retarget.ik.verb_examples`.

Both :class:`NumericSolver` and :class:`HybridSolver` are the IK solvers of the
hierarchical fitting (:func:`retarget.editing.fitting.fit_motion`).
"""

from .hybrid import HybridSolver
from .limb import (
    LIMB_ROLES,
    Limb,
    LimbSolution,
    estimate_hinge_axis,
    hinge_angle,
    limb_from_roles,
    soft_reach,
    solve_limb,
    swivel_angle,
)
from .newton import NewtonResult, solve_ik_newton
from .numeric import IKResult, NumericSolver, default_rigidity, solve_ik
from .verbs import Verb, build_verb, error_map, refine, search_adverb

__all__ = [
    "LIMB_ROLES",
    "HybridSolver",
    "IKResult",
    "Limb",
    "LimbSolution",
    "NewtonResult",
    "NumericSolver",
    "Verb",
    "build_verb",
    "default_rigidity",
    "error_map",
    "estimate_hinge_axis",
    "hinge_angle",
    "limb_from_roles",
    "refine",
    "search_adverb",
    "soft_reach",
    "solve_ik",
    "solve_ik_newton",
    "solve_limb",
    "swivel_angle",
]
