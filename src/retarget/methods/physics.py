"""Physics as a method (Tak & Ko 2005): ``retarget run --method physics``, and the
filter of ``retarget physics`` (the same, with that command's options).

A still clip need not stay still here: a pose that is not statically balanced (its
ZMP outside the support) is moved toward balance over the frames, as the filter is
meant to (``tests/test_one_frame.py`` asks stillness of the kinematic methods only).

The source is first retargeted onto the target by the hierarchical method (Lee &
Shin 1999), then made physically plausible by the filter of
:mod:`retarget.physics.filter`: kinematic (K) and dynamic (D) applications in
sequence, holding balance (the ZMP inside the support), torque limits and
momentum. :func:`filter_motion` is the filter's part, shared with ``retarget
physics`` (which also filters a motion on its own skeleton).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import RetargetError
from ..motion import Motion
from ..result import Result
from ..skeleton import Skeleton
from ._base import Option

__all__ = ["FORMS", "OPTIONS", "filter_motion", "parse_named", "physics_retarget"]

#: How dynamic applications run (:attr:`retarget.physics.filter.FilterSettings.form`).
FORMS = ("curve", "paper")


def parse_named(items: Sequence[str], option: str, unit: str) -> dict[str, float]:
    """``JOINT=VALUE[unit]`` items (``RightHand=8kg``) → {joint: value}."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            out[key.strip()] = float(value.strip().removesuffix(unit).strip())
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            raise RetargetError(
                f"{option} expects JOINT=VALUE (e.g. RightHand=8{unit}), got {item!r}"
            )
    return out


def filter_motion(
    source: Motion,
    *,
    name: str,
    passes: str | Sequence[str] = "2D+1K",
    mass: float = 70.0,
    loads: Mapping[str, float] | None = None,
    torque_limits: Mapping[str, float] | None = None,
    widen: float = 0.0,
    constraints: str | None = None,
    frame: Motion | None = None,
    turn: Any = None,
    hint: Callable[[], Motion] | None = None,
    free_feet: bool = False,
    footprints: bool = False,
    balance: bool = True,
    momentum: bool = True,
    spacing: float = 4.0,
    iterations: int = 3,
    form: str = "curve",
) -> tuple[Result, list[str]]:
    """The physics filter of a Y-up ``source`` (``retarget physics`` after it is turned
    upright or retargeted); the result and the files read (constraints, hint).

    ``name`` is the character named in errors; ``constraints`` a file of position
    goals (as for ``retarget edit``) on ``frame`` (default ``source``), whose axes
    ``turn`` (a quaternion; default none) carries to Y up; ``hint`` reads the
    kinematic hint, the first prior (with the source's joints and frames). ``form``
    is how dynamic applications run (:class:`~retarget.physics.filter.FilterSettings`):
    ``"curve"`` (the default) or ``"paper"`` (§§5–6 as printed).
    """
    from .. import quat
    from ..contacts import detect_contacts
    from ..editing.constraints import parse_constraints
    from ..physics import body_model
    from ..physics.filter import FilterSettings, PhysicsGoals, footplant_goals, physics_filter

    frame = source if frame is None else frame
    turn = quat.identity() if turn is None else turn
    sk = source.skeleton

    def joint(joint_name: str, option: str) -> int:
        if joint_name not in sk.names:
            raise RetargetError(f"{option}: no joint named {joint_name!r} in {name}")
        return sk.index(joint_name)

    loads = dict(loads or {})
    for joint_name in loads:
        joint(joint_name, "--load")
    limits = {joint(k, "--torque-limit"): v for k, v in (torque_limits or {}).items()}
    if any(v <= 0 for v in limits.values()):
        raise RetargetError("--torque-limit: limits must be positive (N m)")
    body = body_model(sk, mass, loads=loads)
    contacts = detect_contacts(source)
    positions = (
        footplant_goals(source, contacts, widen, footprints=footprints) if not free_feet else {}
    )
    inputs = []
    if constraints:
        try:
            text = Path(constraints).read_text(encoding="utf-8")
        except OSError as exc:
            raise RetargetError(f"{constraints}: cannot read the file ({exc.strerror})") from None
        extra = parse_constraints(text, frame, name=constraints)
        for p, goal in extra.positions.items():
            goal = quat.rotate(turn, goal)
            merged = positions.get(p, np.full((source.num_frames, 3), np.nan)).copy()
            have = np.isfinite(goal).all(axis=1)
            merged[have] = goal[have]
            positions[p] = merged
        inputs.append(constraints)
    prior = None
    if hint is not None:
        prior = hint()
    goals = PhysicsGoals(
        contacts, positions, balance=balance, torque_limits=limits, momentum=momentum
    )
    if form not in FORMS:
        raise RetargetError(f"--form: unknown form {form!r}; choose {' or '.join(FORMS)}")
    settings = FilterSettings(spacing=spacing, iterations=iterations, form=form)
    return physics_filter(source, body, goals, passes, settings, hint=prior), inputs


def physics_retarget(
    source: Motion,
    target: Skeleton,
    *,
    passes: str = "2D+1K",
    mass: float = 70.0,
    loads: Mapping[str, float] | None = None,
    torque_limits: Mapping[str, float] | None = None,
    widen: float = 0.0,
    constraints: str | None = None,
    hint: Motion | None = None,
    free_feet: bool = False,
    footprints: bool = False,
    balance: bool = True,
    momentum: bool = True,
    spacing: float = 4.0,
    iterations: int = 3,
    form: str = "curve",
) -> Result:
    """Retarget ``source`` onto ``target`` (hierarchical), then the physics filter.

    What ``retarget physics SRC --target T`` does, as a method: the options are the
    filter's (:func:`filter_motion`); ``constraints`` (a file) and ``hint`` (a
    motion with the target's joints and the source's frames) are on the
    retargeted motion, Y up.

    Returns
    -------
    Result
        Report keys: the filter's (``method``, ``passes``, ``stages``, ``seconds``, ...).
    """
    from ..physics.filter import parse_passes
    from .hierarchical import hierarchical_retarget

    parse_passes(passes)
    moved = hierarchical_retarget(source, target).motion
    if hint is not None and (
        hint.skeleton.names != moved.skeleton.names or hint.num_frames != moved.num_frames
    ):
        raise RetargetError("--hint: a hint must have the target's joints and the source's frames")
    result, _ = filter_motion(
        moved,
        name="the target",
        passes=passes,
        mass=mass,
        loads=loads,
        torque_limits=torque_limits,
        widen=widen,
        constraints=constraints,
        hint=None if hint is None else (lambda: hint),
        free_feet=free_feet,
        footprints=footprints,
        balance=balance,
        momentum=momentum,
        spacing=spacing,
        iterations=iterations,
        form=form,
    )
    return result


# -- options: what `retarget run --method physics` and RunJob.method_options offer ------------


def _loads(items: Sequence[str]) -> dict[str, float]:
    return parse_named(items, "--load", "kg")


def _torque_limits(items: Sequence[str]) -> dict[str, float]:
    return parse_named(items, "--torque-limit", "Nm")


def _read_hint(path: str) -> Motion:
    from ..io.formats import read_motion

    return read_motion(path)


OPTIONS = (
    Option("passes", "--passes", "filter applications, e.g. 1K+3D+1K (default 2D+1K)"),
    Option("mass", "--mass", "body mass in kg, loads excluded (default 70)", type=float),
    Option(
        "loads",
        "--load",
        "a load carried (repeatable)",
        metavar="JOINT=KG",
        many=True,
        convert=_loads,
    ),
    Option(
        "torque_limits",
        "--torque-limit",
        "a joint's torque limit (repeatable)",
        metavar="JOINT=NM",
        many=True,
        convert=_torque_limits,
    ),
    Option(
        "widen",
        "--widen",
        "move the feet outward by this share of height (wide steps)",
        type=float,
        metavar="SHARE",
    ),
    Option(
        "constraints",
        "--constraints",
        "more position goals (as for edit)",
        metavar="C.json",
        file=True,
    ),
    Option(
        "hint",
        "--hint",
        "a kinematic hint, the first prior (the target's joints, the run's frames)",
        metavar="HINT.bvh",
        convert=_read_hint,
        file=True,
    ),
    Option("free_feet", "--free-feet", "no footplant goals", const=True),
    Option(
        "footprints",
        "--footprints",
        "hold each footplant at its mean position (default: where the source has it)",
        const=True,
    ),
    Option("balance", "--no-balance", "no balance (ZMP) goal", const=False),
    Option("momentum", "--no-momentum", "no momentum goal", const=False),
    Option(
        "spacing",
        "--spacing",
        "frames per knot of the B-spline (default 4; 2 for fast motion)",
        type=float,
    ),
    Option("iterations", "--iterations", "Kalman updates per application (default 3)", type=int),
    Option(
        "form",
        "--form",
        "dynamic applications on one curve (curve, the default) or as printed (paper)",
        choices=FORMS,
    ),
)
