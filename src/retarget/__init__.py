"""retarget: carry captured motion onto other characters, edit it, clean it.

Conventions (DESIGN.md): quaternions (w, x, y, z); rotation vectors; Y up;
lengths in the file's unit; joints parents-first; a pose moves in one tangent
space, ``x = (v_root, v_0, …, v_{J-1})`` (:func:`oplus`, :func:`ominus`).
"""

from . import quat
from .characters import PRESETS, make_character
from .contacts import Contacts, detect_contacts
from .editing import edit_motion, parse_constraints, transition
from .errors import FormatError, RetargetError, RetargetWarning, UnknownJointError
from .io import read_asf_amc, read_bvh, read_motion, write_bvh, write_motion
from .kinematics import center_of_mass, forward_kinematics, jacobian, positions
from .methods import METHODS, Result, get_method
from .metrics import MEASURES, evaluate
from .motion import Motion, concatenate, ominus, oplus
from .roles import Roles, find_roles, height
from .skeleton import Skeleton
from .tasks import Constraints

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
