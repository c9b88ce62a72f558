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

from ..core.errors import RetargetError
from ..core.motion import Motion
from ..core.result import Result
from ..core.skeleton import Skeleton
from ._base import Option

__all__ = ["FORMS", "OPTIONS", "PhysicsLive", "filter_motion", "parse_named", "physics_retarget"]

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
    body: Any = None,
) -> tuple[Result, list[str]]:
    """The physics filter of a Y-up ``source`` (``retarget physics`` after it is turned
    upright or retargeted); the result and the files read (constraints, hint).

    ``name`` is the character named in errors; ``constraints`` a file of position
    goals (as for ``retarget edit``) on ``frame`` (default ``source``), whose axes
    ``turn`` (a quaternion; default none) carries to Y up; ``hint`` reads the
    kinematic hint, the first prior (with the source's joints and frames). ``form``
    is how dynamic applications run (:class:`~retarget.physics.filter.FilterSettings`):
    ``"curve"`` (the default) or ``"paper"`` (§§5–6 as printed). ``body`` is a mass
    model of the source's skeleton to use instead of de Leva's of ``mass`` (a
    robot's own, :func:`retarget.targets.robot.hinges.inertia_on`); loads are not added to it.
    """
    from ..core import quat
    from ..editing.constraints import parse_constraints
    from ..humanoid.contacts import detect_contacts
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
    if body is None:
        body = body_model(sk, mass, loads=loads)
    elif loads:
        raise RetargetError("--load: not with a robot's own mass model")
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
    body: Any = None,
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
        body=body,
    )
    return result


# -- live: `retarget serve --method physics` ------------------------------------------------


class PhysicsLive:
    """Tak & Ko's filter on a stream of pose frames (``retarget serve --method physics``):
    the performer's own body made physically plausible, the paper's form frame by
    frame (:class:`retarget.online.physics.OnlineFilters`).

    Footplants come as the stream goes (:class:`retarget.humanoid.contacts.ContactTracker`:
    the first frame calibrates the floor): a planted foot point's goal is where the
    performer has it, balance is on in support and momentum in flight. A pose
    message gives frame ``t`` when frame ``t + lag`` is in (:attr:`lag`: 41 frames a
    dynamic application at a knot every 4 frames). A gap is bridged, not predicted:
    the next frame follows the last one directly.

    Parameters
    ----------
    skeleton : Skeleton
        The performer's (frames are its poses; the output is on it too).
    fps : float
    passes : str
        Applications, ``"2D+1K"`` by default (lag 82 frames).
    mass : float
        Kilograms, loads excluded.
    loads : mapping of joint name to kg, optional
    """

    method = "physics"

    def __init__(
        self,
        skeleton: Skeleton,
        *,
        fps: float,
        passes: str = "2D+1K",
        mass: float = 70.0,
        loads: Mapping[str, float] | None = None,
    ) -> None:
        from ..humanoid.contacts import ContactTracker
        from ..online.physics import OnlineFilters
        from ..physics import body_model
        from ..physics.filter import FilterSettings, PhysicsGoals

        for joint_name in loads or {}:
            if joint_name not in skeleton.names:
                raise RetargetError(f"--load: no joint named {joint_name!r} in the performer")
        self.character = skeleton
        self.fps = float(fps)
        self._tracker = ContactTracker(skeleton, fps=fps)
        points = [int(p) for p in self._tracker.points]
        self._points = points
        body = body_model(skeleton, mass, loads=dict(loads or {}))
        empty = PhysicsGoals(self._contacts(0), {p: np.zeros((0, 3)) for p in points})
        self._filters = OnlineFilters(
            body, empty, passes, FilterSettings(form="paper"), fps=fps, points=points
        )
        #: Frames between an input frame and its pose message.
        self.lag = self._filters.lag
        self._goals_type = PhysicsGoals
        self.reset()

    def _contacts(self, n: int) -> Any:
        from ..humanoid.contacts import Contacts

        tracker = self._tracker
        mask = self._mask[:n] if n else np.zeros((0, len(tracker.points)), dtype=bool)
        return Contacts(
            tracker.points,
            tracker.sides,
            mask,
            float(tracker.floor or 0.0),
            np.array(tracker.clearance),
            tracker.height,
        )

    def reset(self) -> None:
        self._tracker.reset()
        self._mask = np.zeros((256, len(self._points)), dtype=bool)
        self._goal = np.full((256, len(self._points), 3), np.nan)
        self._count = 0
        if hasattr(self, "_filters"):
            self._filters.reset()

    def parse(self, data: dict[str, Any], where: tuple[str, int]) -> tuple[int | None, Any]:
        from ..core.frames import PoseFrame
        from ..io.sensors import pose_frame

        number, root, rotations = pose_frame(data, self.character.num_joints, where=where)
        return number, PoseFrame(root, rotations)

    def step(self, frame: Any) -> tuple[Any, Any, dict[str, Any]] | None:
        from ..core.kinematics import forward_kinematics

        pos = forward_kinematics(self.character, frame.root_position[None], frame.rotations[None])[
            0
        ][0]
        n = self._count
        if n == len(self._mask):  # room for twice as many frames
            self._mask = np.concatenate([self._mask, np.zeros_like(self._mask)])
            self._goal = np.concatenate([self._goal, np.full_like(self._goal, np.nan)])
        planted = self._tracker.step(pos)
        self._mask[n] = planted
        self._goal[n] = np.where(planted[:, None], pos[self._points], np.nan)
        self._count = n + 1
        self._filters.goals = self._goals_type(
            self._contacts(n + 1), {p: self._goal[: n + 1, k] for k, p in enumerate(self._points)}
        )
        out = self._filters.step(frame)
        if out is None:
            return None
        return out.root_position, out.rotations, {}

    def predict(self) -> None:
        """A gap is bridged: nothing to do (module docstring)."""

    def warm_up(self) -> None:
        """Step three rest poses, then reset: the kernels load before a stream's first
        frame (:meth:`retarget.online.stream.LiveStream.warm_up`)."""
        from ..core.frames import PoseFrame

        rotations = np.zeros((self.character.num_joints, 4))
        rotations[:, 0] = 1.0
        for _ in range(3):
            self.step(PoseFrame(np.array(self.character.offsets[0]), rotations))
        self.reset()


# -- options: what `retarget run --method physics` and RunJob.method_options offer ------------


def _loads(items: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    if isinstance(items, Mapping):
        return {str(k): float(v) for k, v in items.items()}
    return parse_named(items, "--load", "kg")


def _torque_limits(items: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    if isinstance(items, Mapping):
        return {str(k): float(v) for k, v in items.items()}
    return parse_named(items, "--torque-limit", "Nm")


def _read_hint(hint: str | Motion) -> Motion:
    if isinstance(hint, Motion):
        return hint
    from ..io.formats import read_motion

    return read_motion(hint)


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
    Option("form", "--form", "dynamic applications: curve (default) or paper", choices=FORMS),
    Option("body", None, "the target's own mass model (a robot's: its links' masses)"),
)
