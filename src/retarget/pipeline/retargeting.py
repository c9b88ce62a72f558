"""The one pipeline: a source motion carried onto any kind of target by any method.

:func:`retarget` is the library's API and what ``retarget run``, ``retarget batch``
and ``retarget demo`` do for each clip (:mod:`retarget.pipeline.job` adds the files):

1. the target is opened (:func:`retarget.targets.open_target`: a file parsed, a model
   compiled, once) and prepares the skeleton the methods run on
   (:meth:`retarget.targets.Target.prepare`);
2. the source is made ready for the method: the body's travel on its root, wherever
   the file puts it (:func:`retarget.humanoid.travel.travel_on_root`: a static
   reference joint above the hips, a floor-level root), then
   :func:`retarget.humanoid.mapping.map_for_method` (mapped by roles onto a target of
   another hierarchy, or only turned Y up);
3. the method runs with the options it declares (:attr:`retarget.methods.Method.options`,
   checked and converted here), the target's defaults and what the target knows of
   itself (:class:`retarget.targets.Prepared`);
4. its result goes onto the whole target, Y up, and the target finishes it into its
   own result in its own axes (:meth:`retarget.targets.Target.finish`);
5. the target measures it (:meth:`retarget.targets.Target.measure`), and the report
   adds where the source's limbs point against the result's
   (:func:`retarget.humanoid.mapping.bone_direction_error`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core import quat
from ..core.errors import RetargetError, warn
from ..core.motion import Motion, frame_slice
from ..core.result import Result, speed
from ..core.skeleton import Skeleton
from ..humanoid.mapping import (
    ForMethod,
    MappingError,
    bone_direction_error,
    map_for_method,
    read_overrides,
)
from ..humanoid.roles import require_humanoid
from ..humanoid.travel import mover, travel_on_root
from ..methods import Method, get_method, method_options
from ..targets import Finished, Prepared, Target, open_target
from .verdict import verdict

__all__ = ["Outcome", "method_arguments", "retarget"]


@dataclass(frozen=True, eq=False)
class Outcome:
    """What :func:`retarget` returns.

    Attributes
    ----------
    output : Motion or RobotTrajectory
        The target's own result: a motion on its skeleton in its axes (a skeleton, a
        character), or a robot's joint trajectories
        (:class:`retarget.io.trajectories.RobotTrajectory`).
    report : dict
        Strict-JSON facts: the method's own (options, residuals, timings), the
        target's (a character's hands in its body, a robot's IK pass), ``source``,
        ``frames``, ``target``, ``world``, ``seconds``, ``frames_per_second``,
        ``goals``, ``measures`` (or ``measures_note``), ``mapping`` and ``verdict``
        (:func:`retarget.pipeline.verdict.verdict`: whether the measures say it is far
        from right; the run warns when they do).
    result : Result
        The method's own: its motion on the skeleton it ran on (Y up) and its goals.
    target : Target
    source : Motion
        The frames retargeted, as given.
    name : str
        The clip's name (a character's file names its animation so).
    """

    output: Any
    report: dict[str, Any]
    result: Result
    target: Target
    source: Motion
    name: str = "retargeted"

    @property
    def measures(self) -> dict[str, Any] | None:
        """The target's measures (:meth:`retarget.targets.Target.measure`), or None."""
        return self.report.get("measures")

    def write(self, path: str | os.PathLike, *, inputs: Sequence[str | os.PathLike] = ()) -> Path:
        """The output written to ``path`` as its target writes it (a motion file, the
        character's file with the clip added, joint trajectories), atomically, never over
        the target's files or ``inputs``."""
        every = (*self.target.inputs, *inputs)
        return self.target.write(path, self.output, name=self.name, inputs=every)


def method_arguments(
    method: Method,
    given: Mapping[str, Any],
    prepared: Prepared,
    mapping: ForMethod,
) -> dict[str, Any]:
    """The method's keyword arguments: the options ``given`` (by name, as the command
    line or a caller gives them), refused when the method does not declare them, and
    converted as declared (:meth:`retarget.methods.Option.value`); the target's defaults
    where none was given; what the target requires (refused when the method does not
    take it) and supplies. A source ``mapped`` from
    another hierarchy keeps to the target's joint limits only where it already does
    (``limits="source"``) unless said otherwise."""
    declared = {option.name: option for option in method.options}
    for name in given:
        if name not in declared:
            first = method_options().get(name)
            flag = first[0].flag if first is not None and first[0].flag else name
            raise RetargetError(f"method {method.name!r} does not take {flag}")
    for name in prepared.requires:
        if name not in declared:
            raise RetargetError(f"method {method.name!r} does not take {prepared.needs or name}")
    defaults = {k: v for k, v in prepared.defaults.items() if k in declared and k not in given}
    given = {**given, **defaults}
    arguments = {k: option.value(given[k]) for k, option in declared.items() if k in given}
    supplied = prepared.supplies(mapping.target)
    arguments.update((k, supplied[k]) for k in prepared.requires)
    if "limits" not in given and mapping.mapped and "limits" in declared:
        arguments["limits"] = "source"
    for k, value in supplied.items():
        if k in declared and k not in arguments:
            arguments[k] = value
    return arguments


def retarget(
    source: Motion,
    target: Target | Skeleton | str | os.PathLike | tuple[str, str],
    method: str = "hierarchical",
    *,
    overrides: Mapping[str, Mapping[str, str]] | str | os.PathLike | None = None,
    frames: str | slice | None = None,
    name: str | None = None,
    measure: bool = True,
    **options: Any,
) -> Outcome:
    """Retarget ``source`` onto ``target`` with ``method`` (module docstring).

    Parameters
    ----------
    source : Motion
        Any unit and up axis (recorded on its skeleton by its reader).
    target : Target, Skeleton, path, preset name or (A, B)
        What :func:`retarget.targets.open_target` opens: a motion or skeleton file, a
        glTF or FBX character, an MJCF or URDF robot, ``"blubby"``, a morph ``(A, B)``.
    method : str
        A name of :data:`retarget.methods.METHODS`.
    overrides : mapping or path, optional
        Roles the mapping cannot find, ``{"source": {role: joint}, "target": {...}}``
        (or a ``--map`` JSON file of them).
    frames : str or slice, optional
        Only these source frames (``"100:400"``).
    name : str, optional
        The source as the report names it (its file); a character's animation is named
        after its stem.
    measure : bool
        Take the target's measures (off: the report has none).
    **options
        The method's options (:attr:`retarget.methods.Method.options`: ``terrain``,
        ``limits``, ``setup``, ``noise``, ``passes``, ...), as the command line gives
        them or as values (a terrain file or a shape).

    Returns
    -------
    Outcome

    Raises
    ------
    RetargetError
        A source or target without humanoid roles (naming the file), an option the
        method does not take, frames that select nothing, a target of no kind.

    Examples
    --------
    Onto a robot, its joint trajectories written as robotics users load them::

        import retarget as rt
        walk = rt.read_motion("lafan_walk.bvh")
        out = rt.retarget(walk, rt.open_target("g1_29dof.xml"), method="omr")
        print(out.measures["skate_ratio"])
        out.write("walk_g1.npz")
    """
    target = open_target(target)
    chosen = get_method(method)
    roles = (
        read_overrides(os.fspath(overrides))
        if isinstance(overrides, (str, os.PathLike))
        else overrides
    )
    called = name or "the source"
    if target.from_source:  # (made from the source's roles: a map cannot name them)
        require_humanoid(called, source.skeleton, arms=True)
    else:
        named = roles.get("source") if roles else None
        require_humanoid(called, source.skeleton, named, side="source", arms=True)
    source = source[frame_slice(frames, source.num_frames)]
    moved_by, original = _travel_on_root(source, roles.get("source") if roles else None)
    source = original
    prepared = target.prepare(source)
    if prepared.check_roles is not None:
        named = roles.get("target") if roles else None
        require_humanoid(prepared.check_roles, prepared.skeleton, named, side="target")
    t0 = time.perf_counter()
    try:
        mapping = map_for_method(
            source,
            prepared.skeleton,
            dict(roles) if roles else None,
            level_feet=prepared.level_feet,
        )
    except MappingError as exc:  # (roles a map left missing): which files
        raise MappingError(f"{called} onto {target.name}: {exc}") from None
    ready = mapping.motion
    arguments = method_arguments(chosen, options, prepared, mapping)
    t1 = time.perf_counter()
    result = chosen.run(ready, mapping.target, **arguments)
    seconds = time.perf_counter() - t1
    carried = target.finish(mapping.unfold(result.motion), mapping)  # (the whole target, Y up)
    report = dict(result.report)
    report.update(carried.report)
    report.update(
        {
            "source": name,
            "frames": ready.num_frames,
            "target": target.name,
            "source_travel": moved_by,  # the joint that moves the source's body
            "world": {
                "source_unit": original.skeleton.unit,
                "source_up": original.skeleton.up,
                "target_unit": prepared.skeleton.unit,
                "target_up": mapping.whole.up,
            },
        }
    )
    # the methods' goals are Y up: into the written motion's axes
    goals = {k: quat.rotate(mapping.axes, g) for k, g in (result.goals or {}).items()}
    if goals:  # per point, each frame's goal or null: `retarget view --report` draws them
        report["goals"] = {
            k: [row.tolist() if np.isfinite(row).all() else None for row in np.asarray(g)]
            for k, g in goals.items()
        }
    if "terrain" in arguments and arguments["terrain"] is not None:
        from ..io.scene import shape_dicts

        report["scene"] = shape_dicts(arguments["terrain"])
    if prepared.whole_time:  # (the target's finish is part of retargeting onto it)
        report.update({"seconds": time.perf_counter() - t0})
        report.update(speed(ready.num_frames, report["seconds"]))
    report.setdefault("seconds", seconds)
    if "frames_per_second" not in report:
        report.update(speed(ready.num_frames, seconds))
    if measure:
        try:
            finished = Finished(original, ready, result, carried.output)
            report["measures"] = target.measure(finished)
        except (RetargetError, KeyError) as exc:
            report["measures_note"] = f"not measured: {exc}"
    if mapping.joint_map is not None:
        report["mapping"] = _mapping_report(original, carried.upright, mapping)
    if measure:
        report["verdict"] = verdict(report)
        if report["verdict"]["far_off"]:
            warn(
                f"the result is far from right onto {target.name}: "
                + "; ".join(report["verdict"]["because"]),
                path=called if name else None,
            )
    stem = Path(name).stem if name else "retargeted"
    return Outcome(carried.output, report, result, target, original, stem)


def _travel_on_root(source: Motion, named: Mapping[str, str] | None) -> tuple[str, Motion]:
    """The joint that moves the source's body (:func:`mover`) and the source with the
    body's travel on its root (:func:`travel_on_root`), its hips as a ``--map`` file
    names them or as its body shows them; the root and the source as it is when its
    roles are not found (the mapping then says what is missing)."""
    hips = (named or {}).get("hips")
    names = source.skeleton.names
    index = names.index(hips) if hips in names else None
    try:
        return names[mover(source, index)], travel_on_root(source, index)
    except RetargetError:
        return names[0], source


def _mapping_report(original: Motion, whole: Motion, mapping: ForMethod) -> dict[str, Any]:
    """Where the result's limbs point against the source's
    (:func:`retarget.humanoid.mapping.bone_direction_error`) and the roles matched."""
    joint_map = mapping.joint_map
    assert joint_map is not None
    angles, bones = bone_direction_error(original, whole, joint_map)
    return {
        "mapped": mapping.mapped,
        "bone_direction_error_deg": dict(zip(bones, angles.mean(axis=0).tolist(), strict=True)),
        "bone_direction_error_mean_deg": float(angles.mean()) if angles.size else 0.0,
        "bone_direction_error_worst_frame_deg": float(angles.mean(axis=1).max())
        if angles.size
        else 0.0,
        "roles": {
            r: [
                original.skeleton.point_names[p],
                mapping.whole.point_names[joint_map.target_roles[r]],
            ]
            for r, p in joint_map.source_roles.items()
            if r in joint_map.target_roles
        },
    }
