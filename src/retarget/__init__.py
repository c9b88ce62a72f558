"""retarget: carry captured motion onto other characters, edit it, clean it.

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
    from . import quat
    from .characters import PRESETS, make_character
    from .contacts import Contacts, detect_contacts
    from .editing import edit_motion, parse_constraints
    from .editing.transition import transition
    from .errors import FormatError, RetargetError, RetargetWarning, UnknownJointError
    from .io import read_asf_amc, read_bvh, read_motion, write_bvh, write_motion
    from .kinematics import center_of_mass, forward_kinematics, jacobian, positions
    from .methods import METHODS, Result, get_method
    from .metrics import MEASURES, evaluate
    from .motion import Motion, concatenate, ominus, oplus
    from .roles import Roles, find_roles, height
    from .skeleton import Skeleton
    from .tasks import Constraints

#: Where each exported name lives (a module of this package; ``quat`` is one).
_HOME = {
    "quat": "quat",
    "PRESETS": "characters",
    "make_character": "characters",
    "Contacts": "contacts",
    "detect_contacts": "contacts",
    "Constraints": "tasks",
    "edit_motion": "editing",
    "parse_constraints": "editing",
    "transition": "editing",
    "FormatError": "errors",
    "RetargetError": "errors",
    "RetargetWarning": "errors",
    "UnknownJointError": "errors",
    "read_asf_amc": "io",
    "read_bvh": "io",
    "read_motion": "io",
    "write_bvh": "io",
    "write_motion": "io",
    "center_of_mass": "kinematics",
    "forward_kinematics": "kinematics",
    "jacobian": "kinematics",
    "positions": "kinematics",
    "METHODS": "methods",
    "Result": "methods",
    "get_method": "methods",
    "MEASURES": "metrics",
    "evaluate": "metrics",
    "Motion": "motion",
    "concatenate": "motion",
    "ominus": "motion",
    "oplus": "motion",
    "Roles": "roles",
    "find_roles": "roles",
    "height": "roles",
    "Skeleton": "skeleton",
}

__all__ = [
    "MEASURES",
    "METHODS",
    "PRESETS",
    "Constraints",
    "Contacts",
    "FormatError",
    "Motion",
    "Result",
    "RetargetError",
    "RetargetWarning",
    "Roles",
    "Skeleton",
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
    "oplus",
    "parse_constraints",
    "positions",
    "quat",
    "read_asf_amc",
    "read_bvh",
    "read_motion",
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
    value = module if name == home else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
