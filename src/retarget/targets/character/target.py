"""Rigged characters as targets: a glTF or FBX character's skeleton, its hands kept out of
its body after every method, and the character's own file written with the clip added.

Opened once (:func:`open_character`: the file parsed once, an FBX converted by Blender
once); the capsules of its body (:func:`retarget.targets.character.skin.character_capsules`)
fitted once, at the first clip. After the method, the hands are kept out of the body's
capsules (:func:`retarget.targets.character.skin.keep_hands_out`), then off its posed
surface by the least departure from the method's arms
(:func:`retarget.targets.character.clearance.clear_hands`, where the character has a
mesh). The measures are DESIGN.md's on the skeleton the method ran on, and the hands'
depth in the body before and after the passes, on the capsules and on the surface, the
latter beside the character's own animations' (``hands_in_body`` in the report).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import RetargetError
from ...core.motion import Motion
from ...io.formats import (
    character_writes,
    holds_character,
    read_character,
    writable,
    write_character,
    write_motion,
)
from ...io.gltf import Character, SkinMesh, character_motion, skin_mesh
from ...tasks.collision import Capsules
from ..base import Carried, Prepared
from ..skeleton import MotionTarget
from .clearance import clear_hands
from .skin import character_capsules, hands_in_body, keep_hands_out
from .surface import SurfaceDepth, hands_in_surface

if TYPE_CHECKING:
    from ...core.arrays import Array
    from ...humanoid.mapping import ForMethod

__all__ = ["CharacterTarget", "open_character"]


@dataclass(frozen=True, eq=False)
class CharacterTarget(MotionTarget):
    """A rigged character (``character``, read from the file ``path``).

    Parameters
    ----------
    character : Character
    path : str
        The user's file (a glTF, or an FBX read through Blender).
    body_collision : bool
        Keep the hands' capsules out of the torso, hips and thighs after the method
        (:func:`retarget.targets.character.skin.keep_hands_out`).
    replace_animations : bool
        Written as a character file: its own animations dropped (default: kept).
    """

    character: Character
    path: str
    body_collision: bool = True
    replace_animations: bool = False
    kind: str = "character"

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.path

    @property
    def inputs(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.path,)

    @property
    def writes(self) -> tuple[str, ...]:
        """The character with the clip (a GLB, and an FBX for an FBX character), or its
        skeleton's motion (``.bvh``, ...)."""
        return (*character_writes(self.path), *writable(any_skeleton=True))

    def prepare(self, source: Motion) -> Prepared:
        return Prepared(self.character.skeleton, check_roles=self.path)

    @cached_property
    def _surface(self) -> SkinMesh | None:
        """The character's triangles skinned to its skeleton (None: no mesh to read)."""
        try:
            return skin_mesh(self.character)
        except RetargetError:
            return None

    @cached_property
    def _body(self) -> tuple[Capsules, dict[int, Array]] | RetargetError:
        """The body's capsules and skinned vertices by joint, fitted once; or why none
        (no roles, no skin)."""
        try:
            return character_capsules(self.character)
        except RetargetError as exc:
            return exc

    def finish(self, motion: Motion, mapping: ForMethod) -> Carried:
        """The hands kept out of the body (unless ``body_collision`` is off), measured
        before and after, then the motion in the character's axes."""
        motion, report = self._hands_out(motion)
        return Carried(mapping.finish(motion), motion, report)

    def _hands_out(self, motion: Motion) -> tuple[Motion, dict[str, Any]]:
        body = self._body
        if isinstance(body, RetargetError):  # (no roles, no skin: nothing to keep apart)
            return motion, {"hands_in_body_note": str(body)}
        capsules, skinned = body
        try:
            before = hands_in_body(motion, skinned, capsules)
            surface_before = self._in_surface(motion)
        except RetargetError as exc:
            return motion, {"hands_in_body_note": str(exc)}
        cleared = None
        if self.body_collision:
            kept = keep_hands_out(motion, capsules)
            mesh = self._surface
            cleared = None if mesh is None else clear_hands(motion, mesh, kept)
            motion = kept if cleared is None else cleared.motion
        now = hands_in_body(motion, skinned, capsules)
        surface_now = self._in_surface(motion)
        capsule_figures = {
            "share_of_frames": now.share,
            "deepest": float(now.depth.max(initial=0.0)),
            "before": {
                "share_of_frames": before.share,
                "deepest": float(before.depth.max(initial=0.0)),
            },
        }
        report: dict[str, Any] = {"kept_out": self.body_collision, "measured_on": "capsules"}
        report |= capsule_figures
        report["depth_counted"] = now.limit
        if surface_now is not None and surface_before is not None:
            # the measure on the posed surface itself (surface.py) is the report's; the
            # capsules', which only approximate the body, beside it
            report |= {
                "measured_on": "surface",
                "share_of_frames": surface_now.share,
                "deepest": float(surface_now.depth.max(initial=0.0)),
                "before": {
                    "share_of_frames": surface_before.share,
                    "deepest": float(surface_before.depth.max(initial=0.0)),
                },
                "every": int(surface_now.frames[1] - surface_now.frames[0])
                if len(surface_now.frames) > 1
                else 1,
                "own_animations": self._own_in_surface,
                "capsules": capsule_figures,
            }
        if cleared is not None:  # the surface pass (clearance.py): what it departed
            report["surface_pass"] = {
                "rounds": cleared.rounds,
                "frames_with_rows": cleared.frames,
                "arm_departure_deg": {
                    "mean": float(cleared.departure.mean()) if len(cleared.departure) else 0.0,
                    "max": float(cleared.departure.max(initial=0.0)),
                    "per_frame": [round(float(d), 3) for d in cleared.departure],
                },
            }
        return motion, {"hands_in_body": report}

    @cached_property
    def _own_in_surface(self) -> dict[str, float]:
        """The surface measure on each of the character's own animations (its artist's
        hands: the figure the retargeted one is read against), share of the frames."""
        mesh = self._surface
        if mesh is None:
            return {}
        out: dict[str, float] = {}
        for name in self.character.animations:
            try:
                clip = character_motion(self.character, name)
                out[name] = hands_in_surface(clip, mesh).share
            except (RetargetError, ValueError):  # (a clip that cannot be sampled)
                continue
        return out

    def _in_surface(self, motion: Motion) -> SurfaceDepth | None:
        """The hands' depth in the posed surface (:func:`hands_in_surface`), if a mesh."""
        mesh = self._surface
        return None if mesh is None else hands_in_surface(motion, mesh)

    def write(
        self,
        path: str | os.PathLike,
        output: Any,
        *,
        name: str,
        inputs: Sequence[str | os.PathLike] = (),
    ) -> Path:
        """A character file (``.glb``; ``.fbx`` for an FBX character) with the clip added
        as the animation ``name``, or any motion format with the skeleton's motion."""
        if holds_character(path):
            return self.write_clips(path, [(name, output)], inputs=inputs)
        return write_motion(path, output, inputs=tuple(inputs))

    def write_clips(
        self,
        path: str | os.PathLike,
        clips: Sequence[tuple[str, Motion]],
        *,
        inputs: Sequence[str | os.PathLike] = (),
    ) -> Path:
        """The character's file once with every clip (name, motion on its skeleton) an
        animation (``retarget batch --one-file``)."""
        clips = [(n, m.replace(skeleton=self.character.skeleton)) for n, m in clips]
        return write_character(
            path,
            self.character,
            clips,
            held=self.path,
            replace=self.replace_animations,
            inputs=inputs,
        )


def open_character(
    path: str | os.PathLike, *, body_collision: bool = True, replace_animations: bool = False
) -> CharacterTarget:
    """A glTF or FBX character (:func:`retarget.io.formats.read_character`: parsed once)."""
    return CharacterTarget(
        read_character(path),
        str(path),
        body_collision=body_collision,
        replace_animations=replace_animations,
    )
