"""retarget: carry captured motion onto other characters, edit it, clean it."""

from . import quat
from .errors import FormatError, RetargetError, UnknownJointError
from .io import read_bvh, write_bvh
from .kinematics import center_of_mass, forward_kinematics, jacobian, positions
from .motion import Motion, concatenate, ominus, oplus
from .skeleton import Skeleton

__all__ = [
    "FormatError",
    "Motion",
    "RetargetError",
    "Skeleton",
    "UnknownJointError",
    "center_of_mass",
    "concatenate",
    "forward_kinematics",
    "jacobian",
    "ominus",
    "oplus",
    "positions",
    "quat",
    "read_bvh",
    "write_bvh",
]
__version__ = "0.1.0"
