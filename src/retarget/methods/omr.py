"""Online motion retargeting over a whole clip (Choi & Ko 2000), ``--method omr``.

A loop over the online method, :class:`retarget.online.omr.OMRRetargeter`
(``reset()``, then ``step(PoseFrame)`` per source frame: :func:`run_method`),
which maps each source pose to the inputs of the filter
:class:`retarget.online.OnlineRetargeter` (:class:`~retarget.online.omr.OMRPlan`)
and steps it; nothing reads ahead, so frames ``0..t`` of the output are the same
whether the clip ends at ``t`` or goes on. Every input of frame ``n`` comes from
source frame ``n`` and, for the floor and the origin of scaling, frame 0:

* ``θ_src``: the source's joint rotations (by name), its root's horizontal
  path (below) and its height: where the target in the first frame's pose
  stands on the floor, plus the source's rise and fall from there scaled by
  the ratio of leg lengths (§6.1: "the pelvis motion along y should be adapted
  to the height difference"; the legs are what hold it up). The leg ratio
  alone put ``blubby``'s pelvis too low for its legs (its hips hang farther
  below its root and its ankles stand higher, bones of another ratio): the
  toe goals lifted it 6 % of height above ``θ_src`` for good, and the
  imitation task, pulling it back through a projector that changes with the
  pose, shook it;
* goals: the source's toe tips (and, for ``setup="full"``, hand tips) and the
  pelvis's horizontal position, made in one of three ways (``goals``):

  - ``"reach"`` (the default, beyond the paper): the source's stride where the
    target's legs can take it, shortened by the ratio of leg lengths where
    they are shorter (``stride = min(1, leg ratio)``: the root's horizontal
    path and the ankles' scaled by it about the first frame's root on the
    floor), and feet of the target's size: a toe tip's goal is its ankle's
    goal plus the source's ankle-to-toe-tip vector times the ratio of foot
    lengths; near the floor the feet's heights above it scaled by that ratio
    (the sole meets the floor where the source's does), lifted as the leg puts
    them: as far above the target's hips as the source's ankle is above its own
    times the ratio of leg lengths (:meth:`retarget.online.omr.OMRPlan._reach`;
    the lift the leg gave the foot when it left the floor is held off, so the
    change has no step: :meth:`~retarget.online.omr.OMRRetargeter._lifted`).
    Scaled by the foot, a kick behind (issue 40: the foot 30 % of height up,
    the knee at 31°) lifted ``blubby``'s ankle 1.15 times as high for legs
    0.65 times as long: the knee closed to 2.6° and snapped open (a step of
    8.1 % of height); by the leg, it bends as the performer's. Hand goals: the
    target's shoulder plus the source's hand from its shoulder times the ratio
    of arm lengths. With the paper's goals a
    character with legs 65 % of the source's (``blubby``) must take strides
    1.5 times as long for its legs: they stay near full extension, the root
    drops and tilts to reach, and the toe tip of a foot 1.15 times the
    source's cannot meet the source's toe tip while its heel is down. On the
    real walks of issue 24 onto ``blubby``, the same filter with the paper's
    goals steps a knee up to 3.2 % of height beyond the source's in a frame
    (a 24 Hz walk), skates up to 1.9 times the source's and jerks up to 2.6
    times; with these, at most 0.8 %, 1.1 and 1.45 times;
  - ``"source"``: the source's own positions, unscaled, as in the paper;
  - ``"height"`` (``scaled=True``): every goal and the root's path scaled by
    the height ratio about the first frame's root on the floor.

The root's translation is 100 times as rigid as a joint in the step's
minimum norm, its rotation 10 times (``root_rigidity``): with a pelvis height
that fits the legs, the root need not rise and fall to meet the feet, and the
upper body, which the lower set-up carries on the root, stays as smooth as
the source's (on the real walks of issue 24: jerk ratio at most 1.45 and skate
1.09 times the source's, against 1.50 and 1.18 with a translation as rigid as
the rotation).

Two guards, online like the rest (frame by frame, from the past only):

* **glitches** (``glitch_speed``, 2,500°/s): a source joint whose bones turn
  faster than a joint can in one frame is a capture glitch and is held where
  it was (:class:`retarget.filters.glitch.GlitchGate`): a foot turned 70° for
  three frames at 120 Hz and back moved its toe tip, an end-effector, 16 % of
  height out and back, and the whole leg followed; held, the ankle steps no
  farther than the source's. An input still away after 0.1 s is a real
  movement and is followed at that speed;
* **goals out of reach**: a limb whose goals lie beyond its reach on more than
  half of the frames so far (after a second) is given up: its rows are not
  tracked and it takes the performer's joint angles, the secondary task, until
  the share falls under a quarter; the report gives each limb's share and the
  limbs given up (``beyond_reach_share``, ``given_up``).

Set-ups: ``"lower"`` is the paper's walking experiment (the legs and the root
move: 30 DOF for a 3-DOF-joint lower body; the toe tips and the pelvis x, z
are the end-effectors; the stance toe is the base). ``"full"`` moves every
joint and adds both hands.
"""

from __future__ import annotations

import math
import time
from typing import Any

from ..core.motion import Motion
from ..core.result import Result
from ..core.skeleton import Skeleton
from ..filters.glitch import MAX_SPEED
from ..humanoid.cuts import find_cuts
from ..online.omr import OMRRetargeter, run_method
from ._base import GLITCH_SPEED, Option, check_same_hierarchy

__all__ = ["omr_retarget"]


def omr_retarget(
    source: Motion,
    target: Skeleton,
    *,
    setup: str = "lower",
    goals: str = "reach",
    scaled: bool = False,
    iterations: int = 2,
    gains: tuple[float, float] = (1.0, 0.3),
    damping: float = 0.01,
    min_dexterity: float = 0.0,
    max_input: float = 0.1,
    root_rigidity: tuple[float, float] = (100.0, 10.0),
    hold_heels: bool = True,
    pelvis_priority: int = 0,
    heel_priority: int = 1,
    heel_reach: float = 0.97,
    single_base: bool = False,
    rest_speed: float = 0.15,
    release_speed: float = 0.3,
    glitch_speed: float = math.degrees(MAX_SPEED),
) -> Result:
    """Retarget frame by frame by closed-loop inverse rate control.

    Parameters
    ----------
    source : Motion
    target : Skeleton
        Has the source's joints (by name).
    setup : {"lower", "full"}
        End-effectors and moving joints (module docstring).
    goals : {"reach", "source", "height"}
        How the goals and the root's path are made (module docstring).
    scaled : bool
        ``goals="height"`` (the command line's ``--scaled-goals``).
    iterations, gains, damping, min_dexterity, max_input
        See :class:`retarget.online.OnlineRetargeter`.
    hold_heels, single_base : bool
        Hold a resting heel (ankle) as well as a resting toe tip; at most one
        foot held at a time, as in the paper (:class:`~retarget.online.BaseSwitching`).
    root_rigidity : (float, float)
        Rigidity of the root's translation (per height) and rotation (per
        radian) against the joints' 1 (module docstring).
    glitch_speed : float
        Degrees per second: a source joint turning faster is a capture glitch, held
        (:class:`retarget.filters.glitch.GlitchGate`); 0: none is.

    Returns
    -------
    Result
        ``goals``: the positions each end-effector tracked (the base foot's
        held position while it is the base); ``report``: tracking error per
        end-effector, frames/s, frames with lowered gains or clamped inputs,
        base switches.
    """
    t0 = time.perf_counter()
    check_same_hierarchy(source.skeleton, target)
    method = OMRRetargeter(
        source.skeleton,
        target,
        fps=source.fps,
        setup=setup,
        goals=goals,
        scaled=scaled,
        hold_heels=hold_heels,
        pelvis_priority=pelvis_priority,
        heel_priority=heel_priority,
        heel_reach=heel_reach,
        single_base=single_base,
        rest_speed=rest_speed,
        release_speed=release_speed,
        glitch_speed=glitch_speed,
        damping=damping,
        gains=gains,
        min_dexterity=min_dexterity,
        max_input=max_input,
        iterations=iterations,
        root_rigidity=root_rigidity,
    )
    cuts = find_cuts(source)  # the filter restarts where the source jumps to another pose
    out_root, out_rot, tracked = run_method(method, source, cuts)
    plan, filt = method.plan, method.filter
    assert plan is not None and filt is not None  # a clip has a first frame
    effectors, active, ratio, leg_ratio = plan.effectors, plan.active, plan.ratio, plan.leg_ratio
    names = plan.names
    motion = Motion(target, out_root, out_rot, source.fps)
    report: dict[str, Any] = {
        "method": "omr",
        "setup": setup,
        "goal_mapping": plan.goals,
        "scaled": plan.goals == "height",
        "ratio": ratio,
        "leg_ratio": leg_ratio,
        "stride": plan.stride,
        "foot_ratio": list(plan.foot_ratios),
        "degrees_of_freedom": int(
            3 + 3 * (target.num_joints if active is None else len(active) + 1)
        ),
        "constraint_rows": 2 + 3 * len(names),  # plus 3 per held heel
        **method.reach_report(),
        "glitches": {  # source joints turning faster than a joint can: held
            "speed_deg_per_s": glitch_speed,
            "frames": method.gate.frames,
            "joint_frames": method.gate.held,
        },
        **filt.report(),
        "seconds": time.perf_counter() - t0,
    }
    goals_out = {
        target.point_names[e.point]: tracked[:, k] for k, e in enumerate(effectors[:-1]) if e.axes
    }
    return Result(motion, report, goals_out)


# -- options: what `retarget run --method omr` and RunJob.method_options offer ----------------

OPTIONS = (
    Option(
        "setup",
        "--setup",
        "end-effectors toe tips + pelvis x,z (lower, the paper's walk) or + hands",
        choices=("lower", "full"),
    ),
    GLITCH_SPEED,
    Option(
        "scaled",
        "--scaled-goals",
        "goals scaled to the target's height (default: strides its legs can take)",
        const=True,
    ),
)
