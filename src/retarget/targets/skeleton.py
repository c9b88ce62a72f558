"""Skeletons as targets: a motion file's or a skeleton file's (BVH, ASF/AMC, npz), a preset
character made from the source's own, or a character morphing between two files.

The method's result is the target's: a motion on the skeleton in its own axes, written
in any motion format (:mod:`retarget.io.formats`) and measured with the measures of
DESIGN.md (:func:`retarget.humanoid.metrics.evaluate`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import RetargetError
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from ..humanoid.characters import PRESETS, make_character, morph_translations
from ..humanoid.metrics import evaluate
from ..humanoid.roles import require_humanoid
from ..io.formats import character_needed, read_skeleton, writable, write_motion
from .base import Carried, Finished, Prepared

if TYPE_CHECKING:
    from ..humanoid.mapping import ForMethod

__all__ = [
    "MorphTarget",
    "MotionTarget",
    "PresetTarget",
    "SkeletonTarget",
    "open_morph",
    "open_preset",
    "open_skeleton",
]


class MotionTarget:
    """What every target whose result is a motion on its skeleton shares: the method's
    result turned into the target's axes, written in a motion format, measured with
    DESIGN.md's measures (:func:`retarget.humanoid.metrics.evaluate`) on the skeleton
    the method ran on. A kind subclasses it and gives ``name``, ``inputs``, ``kind``
    and :meth:`prepare`."""

    name: str
    inputs: tuple[str, ...]
    kind: str = "skeleton"
    #: Made from the source's own skeleton (a preset): the source's roles must be
    #: found as they are, a map file cannot name them.
    from_source: bool = False

    @property
    def writes(self) -> tuple[str, ...]:
        """Motion formats that hold their own skeleton (``.bvh`` first)."""
        return writable(any_skeleton=True)

    def finish(self, motion: Motion, mapping: ForMethod) -> Carried:
        return Carried(mapping.finish(motion), motion)

    def measure(self, run: Finished) -> dict[str, Any]:
        return evaluate(run.ready, run.result.motion, goals=run.result.goals or None)

    def write(
        self,
        path: str | os.PathLike,
        output: Any,
        *,
        name: str,
        inputs: Sequence[str | os.PathLike] = (),
    ) -> Path:
        why = character_needed(path)
        if why is not None:  # (-o OUT.glb: the character's own file, onto a character only)
            raise RetargetError(why)
        return write_motion(path, output, inputs=tuple(inputs))

    def describe(self, measures: Mapping[str, Any]) -> str:
        """``skate R vs source S %H/s``."""
        return f"skate {measures['skate_result']:.3g} vs source {measures['skate_source']:.3g} %H/s"


@dataclass(frozen=True, eq=False)
class SkeletonTarget(MotionTarget):
    """A skeleton as a target (``body``, its unit and up axis recorded), read from the
    files ``inputs`` (none: given in memory), named ``name`` in reports."""

    body: Skeleton
    name: str = "skeleton"
    inputs: tuple[str, ...] = ()

    def prepare(self, source: Motion) -> Prepared:
        return Prepared(self.body, check_roles=self.inputs[0] if self.inputs else None)


def open_skeleton(path: str | os.PathLike) -> SkeletonTarget:
    """The skeleton of a motion or skeleton file (:func:`retarget.io.formats.read_skeleton`)."""
    return SkeletonTarget(read_skeleton(path), str(path), (str(path),))


@dataclass(frozen=True, eq=False)
class PresetTarget(MotionTarget):
    """A preset character (:data:`retarget.humanoid.characters.PRESETS`) made from each
    source's own skeleton, its segments scaled (:func:`make_character`)."""

    preset: str
    from_source: bool = True

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"preset:{self.preset}"

    @property
    def inputs(self) -> tuple[str, ...]:  # type: ignore[override]
        return ()

    def prepare(self, source: Motion) -> Prepared:
        return Prepared(make_character(source.skeleton, preset=self.preset))


def open_preset(name: str) -> PresetTarget:
    """The preset ``name`` (``blubby``, ``sally``, ...); the error lists them."""
    if name not in PRESETS:
        raise RetargetError(f"unknown preset {name!r}; presets: {', '.join(sorted(PRESETS))}")
    return PresetTarget(name)


@dataclass(frozen=True, eq=False)
class MorphTarget(MotionTarget):
    """A character morphing over the clip from ``start`` (the file ``inputs[0]``) to
    ``end`` (``inputs[1]``): per-frame joint offsets linear in time
    (:func:`retarget.humanoid.characters.morph_translations`), which the method must
    take (``translations``)."""

    start: Skeleton
    end: Skeleton
    inputs: tuple[str, ...]

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"morph:{self.inputs[0]}->{self.inputs[1]}"

    def prepare(self, source: Motion) -> Prepared:
        def offsets(skeleton: Skeleton) -> dict[str, Any]:
            return {"translations": morph_translations(skeleton, self.end, source.num_frames)}

        return Prepared(
            self.start,
            check_roles=self.inputs[0],
            supplies=offsets,
            requires=("translations",),
            needs="--target-from/--target-to",
        )


def open_morph(start: str | os.PathLike, end: str | os.PathLike) -> MorphTarget:
    """A character morphing from the skeleton of the file ``start`` to that of ``end``."""
    first, last = read_skeleton(start), read_skeleton(end)
    require_humanoid(str(end), last)
    return MorphTarget(first, last, (str(start), str(end)))
