"""retarget: carry captured motion onto other bodies, edit it, clean it.

The pipeline is one call for every kind of target (a skeleton file or preset, a rigged
glTF/FBX character, an MJCF/URDF robot)::

    import retarget as rt
    walk = rt.read_motion("lafan_walk.bvh")
    out = rt.retarget(walk, rt.open_target("g1_29dof.xml"), method="omr")
    out.measures["skate_ratio"]; out.write("walk_g1.npz")

Conventions (DESIGN.md): quaternions (w, x, y, z); rotation vectors; Y up;
lengths in the file's unit; joints parents-first; a pose moves in one tangent
space, ``x = (v_root, v_0, …, v_{J-1})`` (:func:`oplus`, :func:`ominus`).

The names below load on first use (PEP 562): ``import retarget`` imports none of
numba, scipy, matplotlib or the methods, so the command line starts at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import quat
    from .core.errors import FormatError, RetargetError, RetargetWarning, UnknownJointError
    from .core.kinematics import center_of_mass, forward_kinematics, jacobian, positions
    from .core.motion import Motion, concatenate, ominus, oplus
    from .core.skeleton import Skeleton
    from .editing import edit_motion, parse_constraints
    from .editing.transition import transition
    from .humanoid.characters import PRESETS, make_character
    from .humanoid.contacts import Contacts, detect_contacts
    from .humanoid.metrics import MEASURES, evaluate
    from .humanoid.roles import Roles, find_roles, height
    from .io import read_asf_amc, read_bvh, read_motion, write_bvh, write_motion
    from .methods import METHODS, Result, get_method
    from .pipeline import Outcome, RunJob, retarget, run_job
    from .targets import KINDS, Target, open_target
    from .tasks import Constraints

#: Where each exported name lives (a module of this package; ``quat`` is one).
_HOME = {
    "quat": "core",
    "PRESETS": "humanoid.characters",
    "make_character": "humanoid.characters",
    "Contacts": "humanoid.contacts",
    "detect_contacts": "humanoid.contacts",
    "Constraints": "tasks",
    "edit_motion": "editing",
    "parse_constraints": "editing",
    "transition": "editing",
    "FormatError": "core.errors",
    "RetargetError": "core.errors",
    "RetargetWarning": "core.errors",
    "UnknownJointError": "core.errors",
    "read_asf_amc": "io",
    "read_bvh": "io",
    "read_motion": "io",
    "write_bvh": "io",
    "write_motion": "io",
    "center_of_mass": "core.kinematics",
    "forward_kinematics": "core.kinematics",
    "jacobian": "core.kinematics",
    "positions": "core.kinematics",
    "METHODS": "methods",
    "Result": "methods",
    "get_method": "methods",
    "MEASURES": "humanoid.metrics",
    "evaluate": "humanoid.metrics",
    "Motion": "core.motion",
    "concatenate": "core.motion",
    "ominus": "core.motion",
    "oplus": "core.motion",
    "Roles": "humanoid.roles",
    "find_roles": "humanoid.roles",
    "height": "humanoid.roles",
    "Skeleton": "core.skeleton",
    "Outcome": "pipeline",
    "RunJob": "pipeline",
    "retarget": "pipeline",
    "run_job": "pipeline",
    "KINDS": "targets",
    "Target": "targets",
    "open_target": "targets",
}

__all__ = [
    "KINDS",
    "MEASURES",
    "METHODS",
    "PRESETS",
    "Constraints",
    "Contacts",
    "FormatError",
    "Motion",
    "Outcome",
    "Result",
    "RetargetError",
    "RetargetWarning",
    "Roles",
    "RunJob",
    "Skeleton",
    "Target",
    "UnknownJointError",
    "center_of_mass",
    "concatenate",
    "detect_contacts",
    "edit_motion",
    "evaluate",
    "find_roles",
    "forward_kinematics",
    "get_method",
    "height",
    "jacobian",
    "make_character",
    "ominus",
    "open_target",
    "oplus",
    "parse_constraints",
    "positions",
    "quat",
    "read_asf_amc",
    "read_bvh",
    "read_motion",
    "retarget",
    "run_job",
    "transition",
    "write_bvh",
    "write_motion",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first use (then kept here)."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{home}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
