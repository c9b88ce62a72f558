"""Rigged characters (glTF, FBX) as targets: the kind (:mod:`.target`) and its body's
capsules, the hands-in-body measure and the pass that keeps them out (:mod:`.skin`).
The files themselves are formats: :mod:`retarget.io.gltf`, :mod:`retarget.io.blender`."""

from __future__ import annotations

from .target import CharacterTarget, open_character

__all__ = ["CharacterTarget", "open_character"]
