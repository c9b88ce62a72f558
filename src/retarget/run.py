"""One retargeting job: what ``retarget run`` does for one clip (read, map, run, write, measure).

A :class:`RunJob` names its files and options; :func:`run_job` carries it
out. ``retarget run`` builds one from its arguments, ``retarget batch`` one
per clip (:mod:`retarget.batch`), so a clip retargeted either way is the
same file with the same measures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._json import strict_json
from .errors import RetargetError
from .result import speed

__all__ = ["RunJob", "character_pass", "retarget_clip", "run_job"]


@dataclass(frozen=True)
class RunJob:
    """Files and options of one run (the arguments of ``retarget run``; README).

    ``source`` and ``output`` are paths; a character is ``target`` (a file),
    ``target_preset`` (a name) or ``target_from`` with ``target_to`` (a morph).
    ``method_options`` holds the method's options by name (the ``OPTIONS`` its
    module declares, :class:`retarget.methods.Option`), as the command line gives
    them; :func:`method_options` refuses one the method does not declare.
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
    velocity_limit: float | None = None
    replace_animations: bool = False
    body_collision: bool = True
    method_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.method_options, Mapping):
            raise TypeError("RunJob.method_options: a mapping of option name to value")
        object.__setattr__(self, "method_options", dict(self.method_options))

    @classmethod
    def from_args(cls, args: argparse.Namespace, **changes: Any) -> RunJob:
        """The job of parsed ``run`` (or ``batch``) arguments, with ``changes``: the
        methods' options (:func:`retarget.methods.method_options`) that were given
        go into ``method_options``."""
        fields = [f for f in dataclasses.fields(cls) if f.name != "method_options"]
        given = {f.name: getattr(args, f.name, f.default) for f in fields}
        return cls(**{**given, "method_options": _given_options(args), **changes})

    @property
    def terrain(self) -> str | None:
        """The ``--terrain`` file (``method_options["terrain"]``), if any."""
        return self.method_options.get("terrain")

    @property
    def option_files(self) -> dict[str, str]:
        """The method options that name files (declared ``file=True``: ``terrain``, ...)."""
        from .methods import method_options

        declared = method_options()
        return {
            name: value
            for name, value in self.method_options.items()
            if value and name in declared and declared[name][0].file
        }

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every file the job reads: the source, characters, skeleton, map, and the
        files of method options (terrain, ...)."""
        named = (self.target, self.target_from, self.target_to, self.skeleton, self.map)
        return (self.source, *(p for p in named if p), *self.option_files.values())


def frame_slice(spec: str | None, count: int) -> slice:
    """``A:B`` (Python slice semantics, either side optional) → slice."""
    if not spec:
        return slice(None)
    parts = spec.split(":")
    if len(parts) != 2:
        raise RetargetError(f"--frames expects A:B (e.g. 100:400), got {spec!r}")
    try:
        a, b = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise RetargetError(f"--frames expects whole numbers A:B, got {spec!r}") from None
    chosen = range(count)[slice(a, b)]
    if len(chosen) == 0:
        raise RetargetError(f"--frames {spec} selects no frame of {count}")
    return slice(a, b)


def read_input(path: str, args: RunJob | argparse.Namespace | None = None):
    """A motion file read with the options of ``args`` (``skeleton``, ``fps``, and
    ``unit``/``up``: overrides of what :mod:`retarget.world` finds)."""
    from .io.formats import read_motion

    options = {k: getattr(args, k, None) for k in ("skeleton", "fps", "unit", "up", "animation")}
    return read_motion(path, **options)


def read_character(path: str):
    """A character's skeleton: an ASF file alone, or any motion file's, its unit and up
    axis recorded (:mod:`retarget.world`: a motion file's up from its own frames, an
    ASF's from its rest pose)."""
    if Path(path).suffix.lower() == ".asf":
        from .io.asf_amc import read_asf
        from .world import settle_skeleton

        return settle_skeleton(read_asf(path))
    if Path(path).suffix.lower() in (".glb", ".gltf", ".fbx"):  # (its skin, animated or not)
        from .io.gltf import load_character

        return load_character(path).skeleton
    return read_input(path).skeleton


def require_humanoid(
    path: str,
    skeleton: Any,
    overrides: Mapping[str, str] | None = None,
    *,
    side: str | None = None,
) -> None:
    """Refuse, naming the file, a skeleton without the humanoid roles a retargeting
    command needs (hips, head, two arms and two legs: :func:`retarget.roles.find_roles`).

    A motion file that is not a humanoid (a joint chain, a rig cut to a few joints)
    can still be read, converted and viewed; ``run``, ``physics``, ``eval``, ``map``
    and the other commands that find roles refuse it here, before any work, with the
    one line ``PATH: cannot find the humanoid limbs ...: missing ...``.

    Parameters
    ----------
    path : str
        The file the skeleton was read from, named in the message.
    skeleton : Skeleton
    overrides : mapping of str to str, optional
        The file's part of a ``--map`` file (role → joint name): when it names roles,
        the mapping checks what is still missing instead
        (:func:`retarget.mapping.map_skeletons`).
    side : {"source", "target"}, optional
        For a command that takes ``--map``: the part of a map file that could name the
        roles, which the message then suggests.

    Raises
    ------
    RetargetError
        The file, what is missing and the joints it has.
    """
    from .roles import find_roles

    if overrides:
        return
    try:
        find_roles(skeleton)
    except RetargetError as exc:
        hint = ""
        if side is not None:
            example = json.dumps({side: {"hips": "<joint>", "left_knee": "<joint>"}})
            hint = f"; roles not found: name them with --map map.json, e.g. {example}"
        raise RetargetError(f"{path}: {exc}{hint}") from None


def dumps_json(data: Any) -> str:
    """The JSON text of a report or listing, indented, ending in a newline: strict
    (never NaN or Infinity; :func:`retarget._json.strict_json`)."""
    return strict_json(data, indent=2) + "\n"


def write_json(path: str, data: Any, inputs: Sequence[str]) -> None:
    """Write ``data`` as :func:`dumps_json` text, atomically, never over ``inputs``."""
    from .io.files import atomic_write

    atomic_write(path, dumps_json(data), inputs=inputs)


def target_skeleton(args: RunJob | argparse.Namespace, source) -> Any:
    """The target skeleton (for a morph, the first frame's character)."""
    from .characters import make_character

    morph = bool(args.target_from or args.target_to)
    if sum(map(bool, (args.target, args.target_preset, morph))) > 1:
        raise RetargetError(
            "give one character: --target, --target-preset, or --target-from with --target-to"
        )
    if morph and not (args.target_from and args.target_to):
        raise RetargetError(
            "a morphing character needs both --target-from A.bvh and --target-to B.bvh"
        )
    path: str | None = args.target or args.target_from
    if path:
        target = read_character(path)
        if isinstance(args, RunJob):  # (`run` and `batch`: a --map file may name roles)
            from .mapping import read_overrides

            named = read_overrides(args.map).get("target") if args.map else None
            require_humanoid(path, target, named, side="target")
        else:
            require_humanoid(path, target)
        return target
    if args.target_preset:
        return make_character(source.skeleton, preset=args.target_preset)
    raise RetargetError("say which character: --target TARGET.bvh or --target-preset NAME")


def method_options(
    method, args: RunJob | argparse.Namespace, source, target, *, mapped: bool = False
) -> dict[str, Any]:
    """The job's method options as the method's keyword arguments, refused when the
    method does not declare them (:attr:`retarget.methods.Method.options`).

    A source ``mapped`` from another hierarchy keeps to the target's joint limits
    only where it already does (``limits="source"``) unless ``--limits`` says.

    ``--target-from A --target-to B`` become ``translations``: the per-frame joint
    offsets of a character morphing from A to B over the clip.
    """
    import inspect

    from .methods import method_options as declared
    from .methods.hierarchical import morph_translations

    given = _given_options(args)
    declaration = {option.name: option for option in method.options}
    every = declared()
    for name in given:
        if name not in declaration:
            flag = every[name][0].flag if name in every else name
            raise RetargetError(f"method {method.name!r} does not take {flag}")
    if args.target_to and "translations" not in inspect.signature(method.run).parameters:
        raise RetargetError(f"method {method.name!r} does not take --target-from/--target-to")
    options: dict[str, Any] = {}
    for name, option in declaration.items():
        if name in given:
            options[name] = option.value(given[name])
    if args.target_to:
        end = read_character(args.target_to)
        require_humanoid(args.target_to, end)
        options["translations"] = morph_translations(target, end, source.num_frames)
    if "limits" not in given and mapped and "limits" in declaration:
        options["limits"] = "source"
    return options


def _given_options(args: RunJob | argparse.Namespace) -> dict[str, Any]:
    """The method options given: a job's ``method_options``, or parsed arguments'."""
    if isinstance(args, RunJob):
        return dict(args.method_options)
    from .methods import method_options

    found = {}
    for name, (option, _) in method_options().items():
        value = getattr(args, option.dest, None)
        if option.given(value):
            found[name] = value
    return found


def run_job(job: RunJob) -> dict[str, Any]:
    """Read ``job.source``, retarget it, write ``job.output`` (and ``job.report``).

    What ``retarget run`` does for one clip: the files are read (their units and
    up axes found from the bodies, :mod:`retarget.world`, or ``job.unit`` and
    ``job.up`` for the source), then :func:`retarget_clip`, then the output is
    written atomically.

    Returns
    -------
    dict
        The report of :func:`retarget_clip`.

    Raises
    ------
    RetargetError
        Bad input (a one-line message naming the file).
    """
    from .io.formats import write_motion

    source = read_input(job.source, job)
    if job.target_preset:  # (a preset is made from the roles found: a map cannot name them)
        require_humanoid(job.source, source.skeleton)
    else:
        from .mapping import read_overrides

        named = read_overrides(job.map).get("source") if job.map else None
        require_humanoid(job.source, source.skeleton, named, side="source")
    source = source[frame_slice(job.frames, source.num_frames)]
    if job.target and not job.target_from:
        from .io.robot import is_robot_file

        if is_robot_file(job.target):
            return _run_robot(job, source)
    target = target_skeleton(job, source)
    after = None
    if job.target and Path(job.target).suffix.lower() in (".glb", ".gltf", ".fbx"):
        from .io.gltf import load_character

        after = character_pass(job, load_character(job.target))
    result, report = retarget_clip(job, source, target, after=after)
    characters = (job.target, job.target_from, job.target_to)
    inputs = [job.source] + [p for p in (*characters, job.skeleton) if p]
    out_kind = Path(job.output).suffix.lower()
    if out_kind in (".glb", ".fbx"):  # the character with the clip added
        _write_character(job, result.motion, tuple(inputs))
    else:
        write_motion(job.output, result.motion, inputs=tuple(inputs))
    if job.report:
        write_json(job.report, report, inputs=[*inputs, job.output])
    return report


def character_pass(job: RunJob, character: Any) -> Callable[[Any], tuple[Any, dict[str, Any]]]:
    """The pass ``retarget run`` makes onto a rigged character (:func:`retarget_clip`'s
    ``after``; :mod:`retarget.skin`): its hands kept out of its body (unless
    ``job.body_collision`` is off), measured before and after."""

    def after(motion: Any) -> tuple[Any, dict[str, Any]]:
        from .skin import character_capsules, hands_in_body, keep_hands_out

        try:
            capsules, skinned = character_capsules(character)
            before = hands_in_body(motion, skinned, capsules)
        except RetargetError as exc:  # (no roles, no skin: nothing to keep apart)
            return motion, {"hands_in_body_note": str(exc)}
        if job.body_collision:
            motion = keep_hands_out(motion, capsules)
        now = hands_in_body(motion, skinned, capsules)
        return motion, {
            "hands_in_body": {
                "kept_out": job.body_collision,
                "share_of_frames": now.share,
                "deepest": float(now.depth.max(initial=0.0)),
                "before": {
                    "share_of_frames": before.share,
                    "deepest": float(before.depth.max(initial=0.0)),
                },
                "depth_counted": now.limit,
            }
        }

    return after


def _write_character(job: RunJob, motion: Any, inputs: tuple[str, ...]) -> None:
    """``-o OUT.glb`` (a glTF or FBX target) or ``-o OUT.fbx`` (an FBX target, through
    Blender): the character's file with the clip added as an animation named after
    the source (:func:`retarget.io.gltf.write_character`)."""
    import tempfile

    from .io.files import check_not_input
    from .io.gltf import load_character, write_character

    out = Path(job.output)
    kinds = (".glb", ".gltf", ".fbx") if out.suffix.lower() == ".glb" else (".fbx",)
    if not job.target or Path(job.target).suffix.lower() not in kinds:
        raise RetargetError(
            f"{job.output}: a {out.suffix} output needs a --target character of {', '.join(kinds)}"
        )
    check_not_input(out, inputs)
    character = load_character(job.target)
    name = Path(job.source).stem
    if out.suffix.lower() == ".glb":
        write_character(
            out, character, motion, name=name, replace=job.replace_animations, inputs=inputs
        )
        return
    from .io.blender import convert

    with tempfile.TemporaryDirectory(prefix="retarget-fbx-") as tmp:
        glb = Path(tmp) / f"{out.stem}.glb"
        write_character(glb, character, motion, name=name, replace=job.replace_animations)
        convert(glb, out, fps=motion.fps)


def _run_robot(job: RunJob, source: Any) -> dict[str, Any]:
    """``retarget run`` onto a robot: its joint trajectories written (npz, csv)."""
    from .io.robot import read_robot, write_trajectories

    assert job.target is not None
    robot = read_robot(job.target)
    trajectories, report = retarget_robot_clip(job, source, robot)
    inputs = tuple(p for p in (job.source, job.target, job.skeleton) if p)
    write_trajectories(job.output, robot, trajectories, source.fps, inputs=inputs)
    if job.report:
        write_json(job.report, report, inputs=[*inputs, job.output])
    return report


def retarget_robot_clip(
    job: RunJob, source: Any, robot: Any, *, measure: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Retarget onto a robot (:class:`retarget.io.robot.Robot`): the method runs on the
    robot's method skeleton (:func:`retarget.robot.gather_hinges`), its result goes
    back onto the robot's hinges (:func:`retarget.robot.to_robot`) and is measured
    as robotics users measure (:func:`retarget.robot_measures.measure_robot`).

    Returns
    -------
    trajectories : dict
        ``root_pos``, ``root_quat``, ``dof_pos`` (:func:`retarget.io.robot.joint_trajectories`).
    report : dict
        :func:`retarget_clip`'s, whose ``seconds`` and ``frames_per_second`` now cover
        the whole retargeting, and ``robot``: the model, the IK pass's largest end error
        (m), the hinge angles clamped, and the robot measures (``measure=False``: not
        taken).
    """
    from .io.robot import joint_trajectories
    from .robot import gather_hinges, to_robot
    from .robot_measures import RobotTrajectory, measure_robot

    t0 = time.perf_counter()
    names = robot.skeleton.names
    gathered = gather_hinges(robot.skeleton, names)
    defaults = {"limits": "strict", "plant_heights": "rest"}  # (its zero configuration stands)
    taken = _method_option_names(job.method)
    wanted = {k: v for k, v in defaults.items() if k in taken and k not in job.method_options}
    if wanted:
        job = dataclasses.replace(job, method_options={**job.method_options, **wanted})

    def own(target: Any) -> dict[str, Any]:  # the robot's mass model and torque limits
        from .physics.body import Body
        from .robot import inertia_on
        from .world import metres_per_unit

        mass, com, inertia, limits = inertia_on(gathered, robot, target)
        body = Body(target, mass, com, inertia, metres_per_unit(target.unit), {})
        return {"body": body, "torque_limits": limits}

    result, report = retarget_clip(job, source, gathered.skeleton, extra=own, level_feet=True)
    velocity = np.full(robot.skeleton.num_joints, np.inf)  # the model's, else the job's
    velocity[robot.dof_joint] = np.where(
        np.isfinite(robot.velocity), robot.velocity, job.velocity_limit or np.inf
    )
    motion, fit = to_robot(gathered, result.motion, robot.geoms, velocity=velocity)
    trajectories = joint_trajectories(robot, motion.root_position, motion.rotations)
    seconds = time.perf_counter() - t0
    measures = None
    if measure:
        measures = measure_robot(
            robot,
            RobotTrajectory(
                trajectories["root_pos"],
                trajectories["root_quat"],
                trajectories["dof_pos"],
                source.fps,
            ),
            source,
            velocity=job.velocity_limit,
        )
    report.update(
        {
            "seconds": seconds,
            **speed(source.num_frames, seconds),
            "robot": {
                "model": robot.path,
                "joints": list(robot.joint_names),
                "ik_end_error_m": fit.end_error,
                "clamped": fit.clamped,
                "clamped_rad": fit.clamped_rad,
                "slowed": fit.slowed,
                "hardened": fit.hardened,
                "measures": measures,
            },
        }
    )
    return trajectories, report


def _method_option_names(method: str) -> set[str]:
    from .methods import get_method

    return {o.name for o in get_method(method).options}


def retarget_clip(
    job: RunJob,
    source: Any,
    target: Any,
    *,
    extra: Callable[[Any], dict[str, Any]] | None = None,
    level_feet: bool = False,
    after: Callable[[Any], tuple[Any, dict[str, Any]]] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Retarget a source motion onto a target skeleton as ``job`` says, and measure.

    The source is made ready for the method (:func:`retarget.mapping.map_for_method`:
    mapped by roles onto a target of another hierarchy, or only turned Y up),
    the method runs, its result goes onto the whole target in the target's own
    axes, and it is measured against the source (:func:`retarget.metrics.evaluate`)
    and, where both skeletons have the roles, by world bone directions
    (:func:`retarget.mapping.bone_direction_error`, under ``mapping``).

    Returns
    -------
    result : Result
        Its motion on ``target`` in the target's axes.
    report : dict
        The method's own keys, ``source``, ``output``, ``frames``, ``target``,
        ``world`` (unit and up axis of source and target), ``seconds``,
        ``frames_per_second``, ``measures`` (or ``measures_note``), ``goals`` and
        ``mapping``; ``after(motion) -> (motion, report)``, a pass over the method's
        result on the whole target (Y up) whose keys join the report.
    """
    from . import quat
    from .mapping import MappingError, bone_direction_error, map_for_method, read_overrides
    from .methods import get_method
    from .metrics import evaluate

    method = get_method(job.method)
    overrides = read_overrides(job.map) if job.map else None
    original = source
    if job.target_to:
        character = f"morph:{job.target_from}->{job.target_to}"
    else:
        character = job.target or f"preset:{job.target_preset}"
    try:
        mapping = map_for_method(source, target, overrides, level_feet=level_feet)
    except MappingError as exc:  # (roles a --map left missing): which files
        raise MappingError(f"{job.source} onto {character}: {exc}") from None
    source, method_target = mapping.motion, mapping.target
    options = method_options(method, job, source, method_target, mapped=mapping.mapped)
    if extra is not None:  # what the target knows of itself (a robot's mass model)
        import inspect

        takes = inspect.signature(method.run).parameters
        for name, value in extra(method_target).items():
            if name in takes and name not in options:
                options[name] = value
    t0 = time.perf_counter()
    result = method.run(source, method_target, **options)
    seconds = time.perf_counter() - t0
    ours = result.motion  # Y up, as the source made ready: measured against it
    whole = mapping.unfold(ours)  # on the whole target, Y up
    done: dict[str, Any] = {}
    if after is not None:  # a pass over every method's result (a character's hands out)
        whole, done = after(whole)
    result = dataclasses.replace(result, motion=mapping.finish(whole))
    report = dict(result.report)
    report.update(done)
    report.update(
        {
            "source": job.source,
            "output": job.output,
            "frames": source.num_frames,
            "target": character,
            "world": {
                "source_unit": original.skeleton.unit,
                "source_up": original.skeleton.up,
                "target_unit": target.unit,
                "target_up": mapping.whole.up,
            },
        }
    )
    # the methods' goals are Y up: into the written motion's axes
    goals = {name: quat.rotate(mapping.axes, g) for name, g in (result.goals or {}).items()}
    if goals:  # per point, each frame's goal or null: `retarget view --report` draws them
        report["goals"] = {
            name: [row.tolist() if np.isfinite(row).all() else None for row in np.asarray(g)]
            for name, g in goals.items()
        }
    if job.terrain:
        from .io.scene import read_environment, shape_dicts

        report["scene"] = shape_dicts(read_environment(job.terrain))
    report.setdefault("seconds", seconds)
    if "frames_per_second" not in report:
        report.update(speed(source.num_frames, seconds))
    try:
        report["measures"] = evaluate(source, ours, goals=result.goals or None)
    except (RetargetError, KeyError) as exc:
        report["measures_note"] = f"not measured: {exc}"
    joint_map = mapping.joint_map
    if joint_map is not None:
        angles, bones = bone_direction_error(original, whole, joint_map)
        report["mapping"] = {
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
    return result, report
