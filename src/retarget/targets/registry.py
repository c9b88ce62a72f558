"""The kinds of target by suffix, and the names of presets and morphs: what
:func:`open_target` opens a user's target as.

A kind is one :class:`Kind` line in :data:`_KINDS`: its name, the suffixes of its
files, ``"module:function"`` of its opener (imported when first used), and
optionally a look at the file's first bytes for a suffix several kinds share (an
``.xml`` is a robot only when it is MJCF or URDF). Adding a kind of target is one
module (its type, keeping :class:`retarget.targets.base.Target`) and one line here
(or :func:`register` at run time: a plug-in's). The one other place that looks at
suffixes is the registry of file formats, :mod:`retarget.io.formats`.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.errors import FormatError, RetargetError
from ..core.skeleton import Skeleton
from .base import Target

__all__ = ["KINDS", "Kind", "kind_of", "open_target", "refusal", "register"]


@dataclass(frozen=True)
class Kind:
    """A kind of target: ``name``, the ``suffixes`` of its files (lower case, with the
    dot), ``opener`` (``"package.module:function"``: ``function(path, **options) ->
    Target``), and ``claims(path) -> bool``, which must also hold when given (a look
    inside a file whose suffix other files share)."""

    name: str
    suffixes: tuple[str, ...]
    opener: str
    claims: Callable[[Path], bool] | None = None
    refusal: Callable[[Path], str] | None = None
    """Why a file of these suffixes that :attr:`claims` turns down is not one (an
    ``.xml`` that is empty, not XML, or not MJCF or URDF): the one-line error."""

    def open(self, path: str, **options: Any) -> Target:
        """The target of ``path``, opened once (its files read, its models compiled)."""
        return _call(self.opener, f"a {self.name}", path, **options)

    def takes(self, path: Path) -> bool:
        """Whether ``path`` is a file of this kind."""
        return path.suffix.lower() in self.suffixes and (self.claims is None or self.claims(path))


def _call(opener: str, what: str, *args: Any, **options: Any) -> Target:
    """``opener`` (``"module:function"``) called; an option it does not take refused."""
    module, _, name = opener.partition(":")
    function = getattr(importlib.import_module(module), name)
    taken = inspect.signature(function).parameters
    unknown = sorted(k for k in options if k not in taken)
    if unknown:
        raise RetargetError(f"{what} takes none of {unknown}")
    return function(*args, **options)  # type: ignore[no-any-return]


def _is_robot_model(path: Path) -> bool:
    """A URDF, or an XML file whose first element is ``<mujoco>`` or ``<robot>``."""
    from .robot.model import model_format

    return path.suffix.lower() == ".urdf" or model_format(path) is not None


def _not_a_robot_model(path: Path) -> str:
    from .robot.model import not_a_model

    return not_a_model(path)


_KINDS: dict[str, Kind] = {}
#: The kinds of target by name, in the order they are tried.
KINDS: Mapping[str, Kind] = MappingProxyType(_KINDS)


def register(kind: Kind) -> Kind:
    """Add (or replace) a kind of target; returns it."""
    _KINDS[kind.name] = kind
    return kind


register(
    Kind(
        "robot",
        (".xml", ".mjcf", ".urdf"),
        "retarget.targets.robot:open_robot",
        _is_robot_model,
        _not_a_robot_model,
    )
)
register(Kind("character", (".glb", ".gltf", ".fbx"), "retarget.targets.character:open_character"))
register(
    Kind("skeleton", (".bvh", ".asf", ".amc", ".npz"), "retarget.targets.skeleton:open_skeleton")
)

#: Openers of the targets that are not one file: a preset by name, a morph by two.
PRESET = "retarget.targets.skeleton:open_preset"
MORPH = "retarget.targets.skeleton:open_morph"


def kind_of(path: str | os.PathLike) -> Kind | None:
    """The kind of target the file ``path`` is (None: none)."""
    p = Path(path)
    return next((kind for kind in _KINDS.values() if kind.takes(p)), None)


def refusal(path: str | os.PathLike) -> str | None:
    """Why a file with the suffix of a kind that looks inside its files is none of it
    (:attr:`Kind.refusal`); None when a kind takes it or none claims its suffix."""
    p = Path(path)
    if kind_of(p) is not None:
        return None
    suffix = p.suffix.lower()
    reasons = (k.refusal(p) for k in _KINDS.values() if suffix in k.suffixes and k.refusal)
    return next(reasons, None)


def open_target(
    target: Target | Skeleton | str | os.PathLike | tuple[str, str], **options: Any
) -> Target:
    """A target, opened once: a :class:`Target` as it is; a :class:`Skeleton`; a file
    of a registered kind (:data:`KINDS`: a motion or skeleton file, a glTF or FBX
    character, an MJCF or URDF robot); ``"preset:NAME"`` or a preset's name; a pair of
    files ``(A, B)``, a character morphing from A's skeleton to B's.

    ``options`` go to the kind's opener (a robot's ``velocity_limit``, a character's
    ``body_collision`` and ``replace_animations``); one the kind does not take is
    refused.

    Raises
    ------
    RetargetError
        A file of no kind (the message lists the suffixes), an unknown preset, an
        option the kind does not take.
    """
    if isinstance(target, Skeleton):
        from .skeleton import SkeletonTarget

        if options:
            raise RetargetError(f"a skeleton takes none of {sorted(options)}")
        return SkeletonTarget(target)
    if isinstance(target, Target):
        if options:
            raise RetargetError(f"options {sorted(options)} are for a target file being opened")
        return target
    if isinstance(target, tuple):
        return _call(MORPH, "a morphing character", *target, **options)
    text = os.fspath(target)
    kind = kind_of(text)
    if kind is not None:
        return kind.open(text, **options)
    from ..humanoid.characters import PRESETS

    name = text.removeprefix("preset:")
    if text.startswith("preset:") or (name in PRESETS and not Path(text).exists()):
        return _call(PRESET, "a preset", name, **options)
    reason = refusal(text)
    if reason is not None:
        raise FormatError(text, None, reason)
    known = ", ".join(s for k in _KINDS.values() for s in k.suffixes)
    raise RetargetError(
        f"{text}: not a target this library opens ({known}, or a preset: "
        f"{', '.join(sorted(PRESETS))})"
    )
