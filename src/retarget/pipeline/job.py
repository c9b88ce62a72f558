"""One retargeting job of files: what ``retarget run`` does for one clip (read, retarget,
write, report), on :func:`retarget.pipeline.retarget`.

A :class:`RunJob` names its files and options; :func:`run_job` carries it out.
``retarget run`` builds one from its arguments, ``retarget batch`` one per clip
(:mod:`retarget.pipeline.batch`), so a clip retargeted either way is the same file
with the same measures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import RetargetError
from ..core.motion import Motion
from ..io.files import write_json
from ..io.formats import read_motion
from ..methods import method_options
from ..targets import Target, open_target
from .retargeting import Outcome, retarget

__all__ = ["RunJob", "run_job"]


@dataclass(frozen=True)
class RunJob:
    """Files and options of one run (the arguments of ``retarget run``; README).

    ``source`` and ``output`` are paths; the target is ``target`` (a file: a motion or
    skeleton file, a glTF or FBX character, an MJCF or URDF robot), ``target_preset``
    (a name) or ``target_from`` with ``target_to`` (a morph). ``skeleton``, ``fps``,
    ``unit``, ``up`` and ``animation`` say how the source is read
    (:func:`retarget.io.formats.read_motion`); ``velocity_limit`` (a robot),
    ``body_collision`` and ``replace_animations`` (a character) how the target is
    opened (:func:`retarget.targets.open_target`). ``method_options`` holds the
    method's options by name (the ``OPTIONS`` its module declares,
    :class:`retarget.methods.Option`), as the command line gives them; the pipeline
    refuses one the method does not declare.
    """

    source: str
    output: str
    method: str = "hierarchical"
    target: str | None = None
    target_preset: str | None = None
    target_from: str | None = None
    target_to: str | None = None
    frames: str | None = None
    report: str | None = None
    map: str | None = None
    skeleton: str | None = None
    fps: float | None = None
    unit: str | None = None
    up: str | None = None
    animation: str | None = None
    velocity_limit: float | None = None
    replace_animations: bool = False
    body_collision: bool = True
    method_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.method_options, Mapping):
            raise TypeError("RunJob.method_options: a mapping of option name to value")
        object.__setattr__(self, "method_options", dict(self.method_options))

    @property
    def terrain(self) -> str | None:
        """The ``--terrain`` file (``method_options["terrain"]``), if any."""
        return self.method_options.get("terrain")

    @property
    def option_files(self) -> dict[str, str]:
        """The method options that name files (declared ``file=True``: ``terrain``, ...)."""
        declared = method_options()
        return {
            name: value
            for name, value in self.method_options.items()
            if value and name in declared and declared[name][0].file
        }

    @property
    def target_files(self) -> tuple[str, ...]:
        """The files of the target (a morph has two)."""
        return tuple(p for p in (self.target, self.target_from, self.target_to) if p)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every file the job reads: the source, the target's, the skeleton, the map,
        and the files of method options (terrain, ...)."""
        named = (*self.target_files, self.skeleton, self.map)
        return (self.source, *(p for p in named if p), *self.option_files.values())

    @property
    def target_name(self) -> str:
        """How reports name the target (as :attr:`retarget.targets.Target.name` will)."""
        if self.target_from or self.target_to:
            return f"morph:{self.target_from}->{self.target_to}"
        return self.target or f"preset:{self.target_preset}"

    def open_target(self) -> Target:
        """The job's target, opened once (:func:`retarget.targets.open_target`), with the
        kind's options the job gives (a robot's speed limit; a character's body
        collision and animations)."""
        morph = bool(self.target_from or self.target_to)
        if sum(map(bool, (self.target, self.target_preset, morph))) > 1:
            raise RetargetError(
                "give one character: --target, --target-preset, or --target-from with --target-to"
            )
        if morph and not (self.target_from and self.target_to):
            raise RetargetError(
                "a morphing character needs both --target-from A.bvh and --target-to B.bvh"
            )
        if morph:
            return open_target((str(self.target_from), str(self.target_to)))
        if self.target_preset:
            return open_target(f"preset:{self.target_preset}")
        if not self.target:
            raise RetargetError("say which character: --target TARGET.bvh or --target-preset NAME")
        given: dict[str, Any] = {}
        if self.velocity_limit is not None:
            given["velocity_limit"] = self.velocity_limit
        if not self.body_collision:
            given["body_collision"] = False
        if self.replace_animations:
            given["replace_animations"] = True
        return open_target(self.target, **given)

    def read_source(self) -> Motion:
        """The source motion, read with the job's ``skeleton``, ``fps``, ``unit``, ``up``
        and ``animation``."""
        return read_motion(
            self.source,
            skeleton=self.skeleton,
            fps=self.fps,
            unit=self.unit,
            up=self.up,
            animation=self.animation,
        )

    def replace(self, **changes: Any) -> RunJob:
        """The job with ``changes``."""
        return dataclasses.replace(self, **changes)


def run_job(job: RunJob) -> Outcome:
    """Read ``job.source``, retarget it (:func:`retarget.pipeline.retarget`), write
    ``job.output`` (and ``job.report``), atomically, never over an input.

    Returns
    -------
    Outcome
        Its ``report`` names the output too.

    Raises
    ------
    RetargetError
        Bad input (a one-line message naming the file).
    """
    source = job.read_source()
    target = job.open_target()
    outcome = retarget(
        source,
        target,
        job.method,
        overrides=job.map,
        frames=job.frames,
        name=job.source,
        **job.method_options,
    )
    outcome.report["output"] = job.output
    inputs = (job.source, *target.inputs, *([job.skeleton] if job.skeleton else []))
    outcome.write(job.output, inputs=inputs)
    if job.report:
        write_json(job.report, outcome.report, inputs=[*inputs, job.output])
    return outcome
