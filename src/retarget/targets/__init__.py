"""Kinds of target, each one type keeping one contract (:class:`Target`,
:mod:`.base`), found by one registry (:func:`open_target`, :mod:`.registry`): a skeleton
file, a preset or a morphing character (:mod:`.skeleton`), a rigged glTF or FBX
character (:mod:`.character`), an MJCF or URDF robot (:mod:`.robot`).

The kinds' modules load when a target of theirs is first opened.
"""

from __future__ import annotations

from .base import Carried, Finished, Prepared, Target
from .registry import KINDS, Kind, kind_of, open_target, register

__all__ = [
    "KINDS",
    "Carried",
    "Finished",
    "Kind",
    "Prepared",
    "Target",
    "kind_of",
    "open_target",
    "register",
]
