"""Commands on motion files: ``info``, ``convert``, ``character``, ``map``, ``samples``."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import RetargetError
from ..core.strict_json import dumps_json
from ..humanoid.roles import require_humanoid
from ._common import Presets, motion_options, read_input

if TYPE_CHECKING:
    from ..core.motion import Motion

__all__ = ["add_parsers"]


def cmd_info(args: argparse.Namespace) -> int:
    from ..core.errors import FormatError
    from ..core.lazy import approximate
    from ..targets.registry import kind_of, refusal

    kind = kind_of(args.file)
    reason = refusal(args.file)
    if reason is not None:  # (an .xml that is not a robot's model)
        raise FormatError(args.file, None, reason)
    if kind is not None and kind.name == "robot":
        return _robot_info(args)
    if kind is not None and kind.name == "character":
        return _character_info(args)

    with approximate():  # (a summary: Euler angles by numpy, numba never loaded)
        return _info(args, read_input(args.file, args))


def _robot_info(args: argparse.Namespace) -> int:
    """``retarget info ROBOT.xml|.urdf``: joints, ranges, height, mass, the roles found."""
    from ..humanoid.roles import find_roles
    from ..targets.robot.hinges import gather_hinges
    from ..targets.robot.measures import standing_height
    from ..targets.robot.model import read_robot

    robot = read_robot(Path(args.file))
    gathered = gather_hinges(robot.skeleton)
    method = gathered.skeleton
    info: dict[str, Any] = {
        "file": args.file,
        "kind": "robot",
        "dofs": robot.num_dofs,
        "joints": [
            {
                "name": n,
                "lower": float(lo),
                "upper": float(hi),
                "velocity": float(v),
                "effort": float(e),
            }
            for n, lo, hi, v, e in zip(
                robot.joint_names,
                robot.lower,
                robot.upper,
                robot.velocity,
                robot.effort,
                strict=True,
            )
        ],
        "height_m": standing_height(robot),
        "mass_kg": robot.mass,
        "floating_base_in_file": not robot.fixed_base,
        "gathered": [
            [robot.skeleton.names[k] for k in group] for group in gathered.members if len(group) > 1
        ],
    }
    try:
        roles = find_roles(method)
        info["roles"] = {r: method.point_names[p] for r, p in roles.items()}
    except RetargetError as exc:
        info["roles"] = None
        info["roles_note"] = str(exc)
    joints = ", ".join(f"{j['name']} [{j['lower']:.3g}, {j['upper']:.3g}]" for j in info["joints"])
    groups = "; ".join(" + ".join(g) for g in info["gathered"])
    return _print_info(args, info, {"joints": joints, "gathered": groups})


def _character_info(args: argparse.Namespace) -> int:
    """``retarget info CHAR.glb``: skins, the skeleton's joints, the control bones left
    out, the animations, the roles found."""
    from ..humanoid.roles import find_roles, height
    from ..io.formats import read_character

    char = read_character(args.file)
    sk = char.skeleton
    info: dict[str, Any] = {
        "file": args.file,
        "kind": "character",
        "skins": [f"{name} ({len(joints)} joints)" for name, joints in char.skins],
        "joints": list(sk.names),
        "control_bones": list(char.control),
        "animations": list(char.animations),
        "unit": sk.unit,
        "up": sk.up,
    }
    try:
        roles = find_roles(sk)
        info["height"] = height(sk, roles)
        info["roles"] = {r: sk.point_names[p] for r, p in roles.items()}
    except RetargetError as exc:
        info["height"] = None
        info["roles"] = None
        info["roles_note"] = str(exc)
    return _print_info(args, info)


def _info(args: argparse.Namespace, motion: Motion) -> int:
    from ..humanoid.roles import find_roles, height

    sk = motion.skeleton
    orders: dict[str, int] = {}
    for order in sk.euler_orders:
        orders[order or "-"] = orders.get(order or "-", 0) + 1
    unit_reason, up_reason = _world_reasons(args, args.file, motion)
    info: dict[str, Any] = {
        "file": args.file,
        "joints": sk.num_joints,
        "end_sites": sk.num_sites,
        "frames": motion.num_frames,
        "fps": motion.fps,
        "duration_s": motion.duration,
        "unit": sk.unit,
        "unit_reason": unit_reason,
        "up": sk.up,
        "up_reason": up_reason,
        "root": sk.names[0],
        "channel_orders": orders,
        "channels_per_frame": sk.num_channels,
        "hinge_or_partial_joints": [
            n for n, m in zip(sk.names, sk.dof_mask, strict=True) if 0 < m.sum() < 3
        ],
        "joints_with_limits": int(np.isfinite(sk.limits).any(axis=(1, 2)).sum()),
        "animated_translations": motion.translations is not None,
    }
    try:
        info["height"] = height(sk, find_roles(sk))
    except (RetargetError, KeyError) as exc:
        info["height"] = None
        info["height_note"] = str(exc)
    return _print_info(args, info)


def _print_info(
    args: argparse.Namespace, info: dict[str, Any], shown: dict[str, str] | None = None
) -> int:
    """``info`` as JSON (``--json``) or one ``key value`` line each; ``shown``: the text
    of keys whose values need their own."""
    if args.json:
        sys.stdout.write(dumps_json(info))
        return 0
    for key, value in info.items():
        if shown and key in shown:
            value = shown[key]
        elif isinstance(value, float):
            value = f"{value:.6g}"
        elif isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(value) or "none"
        print(f"{key:<24}{value}")
    return 0


def _world_reasons(args: argparse.Namespace, path: str, motion: Motion) -> tuple[str, str]:
    """Why a motion file read with ``args`` has its unit and its up axis
    (:mod:`retarget.humanoid.world`): an option, the file's declaration or the body."""
    from ..humanoid import world
    from ..io.formats import unit_source

    sk = motion.skeleton
    source = unit_source(path)
    if getattr(args, "unit", None):
        unit = "given with --unit"
    elif source == "found":
        unit = world.find_unit(sk)[1]
    elif source == "skeleton":
        unit = f"declared by the ASF (:units length; lengths in {sk.unit})"
    else:
        unit = "stored in the file"
    up = "given with --up" if getattr(args, "up", None) else world.find_up(sk, motion)[1]
    return unit, up


def cmd_convert(args: argparse.Namespace) -> int:
    from ..io.formats import write_motion

    motion = read_input(args.input, args)
    inputs = [args.input] + ([args.skeleton] if args.skeleton else [])
    write_motion(args.output, motion, inputs=tuple(inputs))
    print(f"wrote {args.output} ({motion.num_frames} frames, {motion.skeleton.num_joints} joints)")
    return 0


def _parse_scales(items: Sequence[str]) -> dict[str, float]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise RetargetError(f"--scale expects SEGMENT=FACTOR (e.g. thigh=0.6), got {item!r}")
    return out


def cmd_character(args: argparse.Namespace) -> int:
    from ..core.motion import Motion
    from ..humanoid.characters import make_character
    from ..humanoid.roles import height
    from ..io.formats import write_motion

    source = read_input(args.source, args)
    scales = _parse_scales(args.scale) if args.scale else None
    if args.preset is None and scales is None and args.uniform == 1.0:
        raise RetargetError("say how to scale: --preset NAME, --scale SEGMENT=F ... or --uniform S")
    require_humanoid(args.source, source.skeleton)  # (a character is a target: a humanoid)
    target = make_character(source.skeleton, scales, preset=args.preset, uniform=args.uniform)
    write_motion(args.output, Motion.at_rest(target, fps=source.fps), inputs=(args.source,))
    print(
        f"wrote {args.output}: height {height(target):.4g} {target.unit} "
        f"(source {height(source.skeleton):.4g})"
    )
    return 0


def cmd_map(args: argparse.Namespace) -> int:
    from ..humanoid.mapping import MappingError, map_skeletons, read_overrides, standing_frame
    from ..humanoid.roles import height
    from ..humanoid.travel import mover
    from ..humanoid.world import up_axis
    from ..targets import open_target

    source = read_input(args.source, args)
    # the skeleton `run` maps onto: a robot's hinge runs gathered into joints
    target = open_target(args.target).prepare(source).skeleton
    overrides = read_overrides(args.map) if args.map else {}
    require_humanoid(args.source, source.skeleton, overrides.get("source"), side="source")
    require_humanoid(args.target, target, overrides.get("target"), side="target")
    s_up = up_axis(source.skeleton, source)
    try:
        jm = map_skeletons(
            source.skeleton, target, overrides=overrides, source_up=s_up, target_up=up_axis(target)
        )
        frame = standing_frame(source, jm.source_roles, s_up)  # as `run` aligns
        if frame is not None:
            jm = map_skeletons(
                source.skeleton,
                target,
                overrides=overrides,
                source_up=s_up,
                target_up=up_axis(target),
                source_pose=source.rotations[frame],
            )
    except MappingError as exc:  # (roles the --map file left missing): which files
        raise MappingError(f"{args.source} onto {args.target}: {exc}") from None
    sides = (("source", args.source, source.skeleton), ("target", args.target, target))
    for which, path, sk in sides:
        roles = jm.source_roles if which == "source" else jm.target_roles
        tall = f"height {height(sk):.4g} {sk.unit}, "
        spine = len(_path_between(sk, roles.get("hips"), roles.get("head"))) - 2
        fingers = sum(1 for n in sk.names if _FINGER.search(n))
        ends = [
            f"{r} is the end site {sk.point_names[p]!r}"
            for r, p in roles.items()
            if r.split("_", 1)[-1] in ("wrist", "ankle") and p >= sk.num_joints
        ]
        if which == "source":  # where the file puts the body's travel (humanoid.travel)
            moves = mover(source, roles.get("hips"))
            ends.append(f"the body moves by {sk.names[moves]!r}")
        print(
            f"{which} {path}: {sk.num_joints} joints, {tall}unit {sk.unit}, up {sk.up or '?'}, "
            f"{max(spine, 0)} joints between hips and head, {fingers} finger joints"
            + "".join(f"; {e}" for e in ends)
        )
    s_names, t_names = source.skeleton.point_names, target.point_names
    print(f"{'role':<20} {'source':<24} target")
    for role, p in sorted(jm.target_roles.items(), key=lambda kv: kv[1]):
        src = s_names[jm.source_roles[role]] if role in jm.source_roles else "-"
        print(f"{role:<20} {src:<24} {t_names[p]}")
    driven = [
        f"{target.names[t]} <- {source.skeleton.names[d]}"
        for t, d in enumerate(jm.driver)
        if d >= 0 and target.names[t] not in {t_names[p] for p in jm.target_roles.values()}
    ]
    if driven:
        print("spine joints by bone-path share: " + ", ".join(driven))
    kept = [target.names[t] for t, d in enumerate(jm.driver) if d < 0]
    used = set(jm.driver.tolist())
    folded = [n for j, n in enumerate(source.skeleton.names) if j not in used]
    print(
        "target joints without a source joint (rest rotation, or taking up an aim their "
        "parent's channels miss): " + (", ".join(kept) or "none")
    )
    print("source joints folded into their parents: " + (", ".join(folded) or "none"))
    if frame is not None:
        print(f"aligned at source frame {frame} (its rest pose does not stand)")
    return 0


_FINGER = re.compile(r"thumb|index|middle|ring|pinky|finger", re.IGNORECASE)


def _path_between(skeleton: Any, top: int | None, bottom: int | None) -> list[int]:
    """Joints from ``top`` down to ``bottom`` (both included); [] when either is None."""
    if top is None or bottom is None:
        return []
    chain = [int(p) for p in skeleton.chain(bottom)]
    return chain[chain.index(top) :] if top in chain else []


def cmd_samples(args: argparse.Namespace) -> int:
    from ..io.samples import SAMPLES, sample_path

    for name in args.names or list(SAMPLES):
        print(sample_path(name))
    return 0


def _character_scale(p: argparse.ArgumentParser) -> None:
    """``character --scale``, whose help lists the segments (when it is used)."""
    from ..humanoid.characters import SEGMENTS

    p.add_argument(
        "--scale", nargs="+", metavar="SEGMENT=F", help=f"segments: {', '.join(SEGMENTS)}"
    )


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the sub-parsers ``sub`` of ``retarget``."""

    p = sub.add_parser(
        "info",
        help="joints, frames, fps, unit, height, channel orders of a motion file; "
        "joints, ranges, height, mass and roles of a robot (.xml MJCF, .urdf)",
    )
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="print JSON")
    motion_options(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("convert", help="convert between .bvh, .amc (+.asf) and .npz")
    p.add_argument("input")
    p.add_argument("output", help=".bvh or .npz")
    motion_options(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser(
        "character",
        help="make a target character by scaling a skeleton's segments",
        complete=_character_scale,
    )
    p.add_argument("source", help="motion file whose skeleton is the model")
    p.add_argument("--preset", choices=Presets())
    p.add_argument("--uniform", type=float, default=1.0, help="factor on every bone")
    p.add_argument("-o", "--output", required=True, help="BVH with one rest frame")
    motion_options(p)
    p.set_defaults(func=cmd_character)

    p = sub.add_parser(
        "map",
        help="print the joint mapping between two skeletons of any hierarchy",
        description="Roles found on both skeletons, the target joints each source joint "
        "drives, and what stays unmapped (exit 2 when a required role is missing).",
    )
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--map", metavar="MAP.json", help="roles completing or overriding the found")
    motion_options(p)
    p.set_defaults(func=cmd_map)

    p = sub.add_parser(
        "samples", help="fetch the public sample clips (or find them in RETARGET_DATA)"
    )
    p.add_argument("names", nargs="*", help="default: all")
    p.set_defaults(func=cmd_samples)
