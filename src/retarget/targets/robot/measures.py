"""Robot measures: what a robotics user checks on joint trajectories, against the human source.

Any trajectory of a robot (``root_pos`` (F, 3) m, ``root_quat`` (F, 4) wxyz,
``dof_pos`` (F, D) rad in the model's joint order) is measured the same way,
ours or another retargeter's (GMR's), through MuJoCo's own kinematics and
collision detection of the model (the reference the field checks with):

* **skate** (DESIGN.md's measure): mean horizontal speed of each foot point
  over the pairs of frames where the source's point of the same role is in
  contact (:func:`retarget.humanoid.contacts.detect_contacts` on the source; the robot's
  ankle for the ankle, its toe tip on the sole for a toe or toe tip), in % of
  the robot's standing height per second, and that over the source's own skate
  on the same pairs in % of its height per second (``skate_ratio``);
* **floating**: mean height of the lowest point of a planted foot's collision
  geometry above the floor (cm), and the share of contact frames above 2 cm;
* **penetration**: frames with a sole deeper than 0.5 cm below the floor, and the
  deepest (cm);
* **joint limits**: angles outside the model's ranges (count, and the worst in
  radians); **velocity limits** where the model (or ``velocity``) gives them;
* **self-collision**: frames where two bodies that are not parent and child
  interpenetrate by more than ``margin`` (MuJoCo's contacts of the collision
  geometry; pairs already in contact at the zero configuration, which a model
  has by design, left out), the share, the deepest (cm), and the pairs with
  their frames;
* **jerk**: mean squared jerk of the bodies' positions over that of the
  source's joints scaled by the height ratio (``jerk_ratio``) and of the hinge
  angles (rad/s³);
* **segment directions**: mean angle (degrees) between the robot's thighs,
  shins, upper arms and forearms and the human's (and per segment,
  ``segment_directions_deg``) (each from the joint of one
  role to the next, :func:`retarget.humanoid.roles.find_roles` on both; a robot's joint
  of several hinges stands at their centre, :func:`retarget.targets.robot.hinges.gather_hinges`,
  not at the anchor its file happens to give the first hinge);
* **where the model cannot take the pose** (``cannot_take``, :func:`departures`): the
  runs of frames where a limb segment points more than :data:`FAR_DEG` from the human's,
  each with how far (degrees) and what held it (its hinges at a bound of their ranges
  or at their speed limits, its links touching another link), or nothing the model
  has: the method's own.

The floor is z = 0 (the robot's world), the up axis z.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import quat
from ...core.arrays import Array, runs
from ...core.kinematics import forward_kinematics, rest_pose
from ...core.motion import Motion
from ...humanoid import world
from ...humanoid.contacts import detect_contacts
from ...humanoid.roles import find_roles, height
from ...io.trajectories import RobotTrajectory
from .contacts import model_qpos, self_contacts
from .floor import SEGMENTS, direction_floor, limb_segments, segment_angles
from .hinges import Gathered, gather_hinges
from .model import Geom, Robot
from .trajectories import robot_motion

__all__ = [
    "FAR_DEG",
    "ROBOT_MEASURES",
    "SEGMENTS",
    "departures",
    "measure_robot",
    "robot_view",
    "standing_height",
]

#: The scalar robot measures, what each is (the keys of :func:`measure_robot` that
#: ``retarget eval --robot`` prints).
ROBOT_MEASURES = {
    "skate_ratio": "foot skate over the source's contacts, over the source's own",
    "float_cm": "planted feet's soles above the floor, mean (cm)",
    "float_over_2cm_share": "share of contact frames with the sole above 2 cm",
    "penetration_frames": "frames with a sole more than 0.5 cm under the floor",
    "penetration_max_cm": "deepest sole under the floor (cm)",
    "limit_violations": "hinge angles outside the model's ranges (frames x joints)",
    "velocity_violations": "hinge speeds over the model's limits (frames x joints)",
    "self_collision_share": "share of frames with links more than 0.5 cm into each other",
    "self_collision_max_cm": "deepest self-collision (cm)",
    "jerk_ratio": "body jerk over the scaled source's",
    "joint_jerk": "mean squared hinge jerk (rad²/s⁶)",
    "segment_direction_deg": "limb segment directions from the human's, mean (degrees)",
}


#: A segment this far from the human's on a frame (degrees) departs from the pose.
FAR_DEG = 15.0
#: A hinge this near a bound of its range (rad) is held by it.
_AT_BOUND = 0.01
#: Runs listed per segment, the worst first (the rest counted).
_LISTED = 10


def departures(
    angles: dict[str, Array],
    hinges: dict[str, list[int]],
    robot: Robot,
    traj: RobotTrajectory,
    vmax: Array,
    touching: dict[str, list[tuple[int, str, float]]],
) -> dict[str, dict]:
    """Where the robot does not take the performer's pose, per segment.

    ``angles`` is, per segment (``left_thigh``, ...), its angle from the human's each
    frame (F,) in degrees; ``hinges`` the robot's hinges (indices into ``traj.dof_pos``)
    that turn it; ``vmax`` (D,) their speed limits (rad/s; inf where none);
    ``touching`` per segment the (frame, other body, depth m) of its links in contact
    with another. Each run of frames farther than :data:`FAR_DEG` (gaps of two frames
    closed) is ``{"frames": [first, last], "worst_deg", "mean_deg", "held_by": {"range":
    [{"joint", "bound", "share"}], "speed": [joints], "links": [{"body", "depth_cm"}]}}``
    (``held_by`` empty: nothing of the model held it, the method's own departure); the
    :data:`_LISTED` worst runs are listed, and every run's frames counted.
    """
    out: dict[str, dict] = {}
    theta = traj.dof_pos
    speed = np.zeros_like(theta)
    speed[1:] = np.abs(np.diff(theta, axis=0)) * traj.fps
    for segment, angle in angles.items():
        far = angle > FAR_DEG
        for start, end in runs(~far):  # close gaps of up to two frames
            if 0 < start and end < len(far) and end - start <= 2:
                far[start:end] = True
        found: list[dict[str, Any]] = []
        for start, end in runs(far):
            span = slice(start, end)
            held: dict[str, list] = {}
            for d in hinges.get(segment, []):
                for bound, value in (("lower", robot.lower[d]), ("upper", robot.upper[d])):
                    share = float((np.abs(theta[span, d] - value) < _AT_BOUND).mean())
                    if np.isfinite(value) and share >= 0.5:
                        held.setdefault("range", []).append(
                            {"joint": robot.joint_names[d], "bound": bound, "share": share}
                        )
                if np.isfinite(vmax[d]) and (speed[span, d] >= 0.999 * vmax[d]).any():
                    held.setdefault("speed", []).append(robot.joint_names[d])
            deepest: dict[str, float] = {}
            for k, other, depth in touching.get(segment, []):
                if start <= k < end:
                    deepest[other] = max(deepest.get(other, 0.0), depth)
            if deepest:
                held["links"] = [
                    {"body": b, "depth_cm": 100.0 * d} for b, d in sorted(deepest.items())
                ]
            found.append(
                {
                    "frames": [start, end - 1],
                    "worst_deg": float(angle[span].max()),
                    "mean_deg": float(angle[span].mean()),
                    "held_by": held,
                }
            )
        if found:
            found.sort(key=lambda run: -float(run["worst_deg"]))
            out[segment] = {"frames": int(far.sum()), "runs": found[:_LISTED]}
    return out


def standing_height(robot: Robot) -> float:
    """Top of the collision geometry above its bottom at the zero configuration (m)."""
    sk = robot.skeleton
    pos, rot = rest_pose(sk, sk.offsets[0])
    pts = np.concatenate(
        [quat.rotate(rot[g.joint], g.points) + pos[g.joint] for g in robot.geoms] or [pos]
    )
    return float(np.ptp(pts[:, 2]))


def robot_view(robot: Robot, traj: RobotTrajectory) -> tuple[Motion, list[tuple[int, int, float]]]:
    """The trajectory as a motion to look at (``retarget view --robot``) and the robot's
    collision capsules on it (:func:`retarget.targets.robot.hinges.geom_capsules`, the ones
    its IK pass keeps apart): the motion's skeleton is the robot's with two end sites a capsule
    (``_capsule<i>_a``, ``_b``); each capsule is (point a, point b, radius m)."""
    from .hinges import geom_capsules

    motion = robot_motion(robot, traj)
    sk = motion.skeleton
    caps = geom_capsules(robot.geoms)
    n = len(caps.joints)
    names = tuple(f"_capsule{i}_{end}" for i in range(n) for end in "ab")
    shown = sk.replace(
        site_names=sk.site_names + names,
        site_parents=np.concatenate([sk.site_parents, np.repeat(caps.joints, 2)]).astype(np.intp),
        site_offsets=np.concatenate(
            [sk.site_offsets, np.stack([caps.a, caps.b], axis=1).reshape(-1, 3)]
        ),
    )
    first = sk.num_points
    capsules = [(first + 2 * i, first + 2 * i + 1, float(caps.radius[i])) for i in range(n)]
    return motion.replace(skeleton=shown), capsules


def _feet(robot: Robot) -> dict[str, list[int]]:
    """Per side, the robot joints of the foot: the ankle's hinges and everything below."""
    sk = robot.skeleton
    roles = find_roles(sk)
    out = {}
    for side in ("left", "right"):
        ankle = roles[f"{side}_ankle"]
        out[side] = [j for j in range(sk.num_joints) if ankle in sk.chain(j)]
    return out


def _lowest(geom: Geom, pos: Array, rot: Array) -> Array:
    """The height (F,) of ``geom``'s lowest point, its joint at ``pos`` (F, 3) turned by
    ``rot`` (F, 4): exact for every shape (a round one's support point straight down;
    a box's corners, a mesh's hull vertices), not the surface points the IK samples."""
    turn = quat.multiply(rot, geom.rotation)
    centre = pos[:, 2] + quat.rotate(rot, geom.position)[:, 2]
    down = quat.rotate(quat.conjugate(turn), np.array([0.0, 0.0, -1.0]))  # geom frame
    r, h = float(geom.size[0]), float(geom.size[1]) if len(geom.size) > 1 else 0.0
    if geom.kind == "sphere":
        reach = r * np.ones(len(pos))
    elif geom.kind == "capsule":
        reach = h * np.abs(down[:, 2]) + r
    elif geom.kind == "ellipsoid":
        reach = np.linalg.norm(down * geom.size[:3], axis=-1)
    elif geom.kind == "cylinder":
        reach = h * np.abs(down[:, 2]) + r * np.linalg.norm(down[:, :2], axis=-1)
    else:  # a box's corners, a mesh's vertices: its support is one of them
        world = quat.rotate(rot[:, None], geom.points) + pos[:, None]
        return world[..., 2].min(axis=1)
    return centre - reach


def _sole_heights(robot: Robot, motion: Motion) -> tuple[Array, Array]:
    """Per frame and side: the lowest point of the foot's collision geometry (F, 2)
    (:func:`_lowest`) and the foot geometry's centre horizontally (F, 2, 3), from our
    kinematics."""
    pos, rot = forward_kinematics(robot.skeleton, motion.root_position, motion.rotations)
    lows, centres = [], []
    for side, joints in _feet(robot).items():
        mine = [g for g in robot.geoms if g.joint in joints]
        if not mine:  # no geometry: the foot's joints and sites
            raise ValueError(f"the robot's {side} foot has no collision geometry")
        pts = [quat.rotate(rot[:, g.joint, None], g.points) + pos[:, g.joint, None] for g in mine]
        lows.append(np.min([_lowest(g, pos[:, g.joint], rot[:, g.joint]) for g in mine], axis=0))
        centres.append(np.concatenate(pts, axis=1).mean(axis=1))
    return np.stack(lows, 1), np.stack(centres, 1)


def measure_robot(
    robot: Robot,
    traj: RobotTrajectory,
    source: Motion,
    *,
    margin: float = 0.005,
    velocity: float | None = None,
    gathered: Gathered | None = None,
    floor: bool = False,
) -> dict[str, float | int | list | dict]:
    """The robot measures of a trajectory against its human source (module docstring).

    ``source`` is the human clip the trajectory was made from (same frames, any
    unit and axes); ``margin`` the self-collision depth that counts (m);
    ``velocity`` a joint velocity limit (rad/s) for hinges the model gives none;
    ``gathered`` the robot's hinges gathered (:func:`gather_hinges`, made when not given);
    ``floor``: the least segment directions its limbs' ranges allow, too
    (:func:`retarget.targets.robot.floor.direction_floor`: seconds on a long clip).
    """
    import mujoco

    model = robot.model
    data = mujoco.MjData(model)
    qpos = model_qpos(model, robot, traj.root_pos, traj.root_quat, traj.dof_pos)
    f = traj.num_frames
    motion = robot_motion(robot, traj)
    tall = standing_height(robot)
    # contacts of the source, in its own frames
    s_roles = find_roles(source.skeleton)
    s_height = height(source.skeleton, s_roles)
    contacts = detect_contacts(source, roles=s_roles)
    planted = np.stack([contacts.foot(side) for side in ("left", "right")], axis=1)  # (F, 2)
    low, _ = _sole_heights(robot, motion)
    # skate: each source foot point's contacts, the robot's point of the same role
    # (ankle; toe and toe tip: the toe tip, on the sole), horizontal steps over pairs
    # of contact frames, each in % of its own body's height per second
    s_pos, _ = forward_kinematics(source.skeleton, source.root_position, source.rotations)
    up = world.up_axis(source.skeleton, source)
    if gathered is None:  # a hip's point: its hinges' centre
        gathered = gather_hinges(robot.skeleton)
    r_roles = {r: int(gathered.points[p]) for r, p in find_roles(gathered.skeleton).items()}
    r_pos, _ = forward_kinematics(gathered.rig, motion.root_position, motion.rotations)
    names = {p: r for r, p in s_roles.items()}
    ours_steps, theirs_steps = [], []
    for k, point in enumerate(contacts.points):
        role = names.get(int(point), "")
        side, _, kind = role.partition("_")
        mine = r_roles.get(f"{side}_{'ankle' if kind == 'ankle' else 'toe_tip'}")
        if mine is None:
            continue
        pairs = contacts.mask[1:, k] & contacts.mask[:-1, k]
        step = np.diff(r_pos[:, mine, :2], axis=0)
        ours_steps.append(np.linalg.norm(step, axis=-1)[pairs] * traj.fps / tall * 100.0)
        s_step = np.diff(s_pos[:, point], axis=0)
        s_step = s_step - (s_step @ up)[:, None] * up
        theirs_steps.append(np.linalg.norm(s_step, axis=-1)[pairs] * source.fps / s_height * 100.0)
    skate = float(np.concatenate(ours_steps).mean()) if ours_steps else 0.0
    s_skate = float(np.concatenate(theirs_steps).mean()) if theirs_steps else 0.0
    above = np.maximum(low, 0.0)[planted] * 100.0
    # limits
    lo, hi = robot.lower, robot.upper
    under, over = lo - traj.dof_pos, traj.dof_pos - hi
    limit_worst = float(np.maximum(np.maximum(under, over), 0.0).max(initial=0.0))
    limit_count = int(((under > 1e-6) | (over > 1e-6)).sum())
    vmax = robot.velocity.copy()
    if velocity is not None:
        vmax = np.where(np.isfinite(vmax), vmax, velocity)
    speed = np.abs(np.diff(traj.dof_pos, axis=0)) * traj.fps
    velocity_count = int((speed > vmax + 1e-9).sum())
    # MuJoCo: bodies and self-collision
    xpos = np.empty((f, model.nbody, 3))
    for k in range(f):
        data.qpos[:] = qpos[k]
        mujoco.mj_kinematics(model, data)
        xpos[k] = data.xpos
    hits = self_contacts(model, qpos)
    depth = np.zeros(f)
    np.maximum.at(depth, hits.frame, -hits.dist)
    pairs_hit: dict[tuple[str, str], tuple[float, set[int]]] = {}
    for k, (b1, b2), d in zip(hits.frame, hits.bodies, -hits.dist, strict=True):
        if d > margin:
            key = tuple(sorted((model.body(int(b1)).name, model.body(int(b2)).name)))
            deepest, frames = pairs_hit.get(key, (0.0, set()))
            frames.add(int(k))
            pairs_hit[key] = (max(deepest, float(d)), frames)
    # jerk against the scaled source
    scale = tall / s_height  # source unit → robot metres, by the heights
    body_jerk = np.diff(xpos[:, 1:], n=3, axis=0) * traj.fps**3
    src_jerk = np.diff(s_pos * scale, n=3, axis=0)  # (the scale takes the unit too)
    src_jerk = src_jerk * source.fps**3
    jerk_ratio = float((body_jerk**2).sum(-1).mean() / max((src_jerk**2).sum(-1).mean(), 1e-300))
    joint_jerk = float(((np.diff(traj.dof_pos, n=3, axis=0) * traj.fps**3) ** 2).mean())
    # segment directions, and the least the limbs' ranges allow
    segments = limb_segments(robot, gathered, source)
    angles = segment_angles(
        segments, forward_kinematics(segments.rig, motion.root_position, motion.rotations)[0]
    )
    by_segment = {n: float(a.mean()) for n, a in zip(segments.names, angles, strict=True)}
    floors = direction_floor(robot, gathered, traj, segments) if floor else None
    return {
        "frames": f,
        "robot_height_m": tall,
        "skate": skate,
        "skate_source": s_skate,
        "skate_ratio": skate / s_skate if s_skate > 0 else float("inf"),
        "float_cm": float(above.mean()) if above.size else 0.0,
        "float_over_2cm_share": float((above > 2.0).mean()) if above.size else 0.0,
        "penetration_frames": int((low.min(axis=1) < -0.005).sum()),
        "penetration_max_cm": float(max(-low.min(), 0.0) * 100.0),
        "limit_violations": limit_count,
        "limit_worst_rad": limit_worst,
        "velocity_violations": velocity_count,
        "self_collision_share": float((depth > margin).mean()),
        "self_collision_max_cm": float(depth.max(initial=0.0) * 100.0),
        "self_collision_pairs": [
            {"bodies": list(k), "depth_cm": v * 100.0, "frames": len(frames)}
            for k, (v, frames) in sorted(pairs_hit.items(), key=lambda kv: -len(kv[1][1]))
        ],
        "jerk_ratio": jerk_ratio,
        "joint_jerk": joint_jerk,
        "segment_direction_deg": float(angles.mean()) if angles.size else float("nan"),
        "segment_directions_deg": by_segment,
        **(
            {
                "segment_direction_floor_deg": float(floors.mean()) if floors.size else 0.0,
                "segment_direction_floors_deg": {
                    n: float(a.mean()) for n, a in zip(segments.names, floors, strict=True)
                },
            }
            if floors is not None
            else {}
        ),
        "cannot_take": departures(
            dict(zip(segments.names, angles, strict=True)),
            dict(zip(segments.names, (list(d) for d in segments.dofs), strict=True)),
            robot,
            traj,
            vmax,
            _touching(model, robot, hits, dict(zip(segments.names, segments.dofs, strict=True))),
        ),
    }


def _touching(
    model, robot: Robot, hits, segment_dofs: dict[str, tuple[int, ...]]
) -> dict[str, list[tuple[int, str, float]]]:
    """Per segment, (frame, the other body's name, depth m) of every contact of one of
    its links (the bodies its hinges move) with another link."""
    out: dict[str, list[tuple[int, str, float]]] = {}
    for segment, dofs in segment_dofs.items():
        mine = {int(model.joint(robot.joint_names[d]).bodyid[0]) for d in dofs}
        out[segment] = [
            (int(k), model.body(int(b2 if b1 in mine else b1)).name, float(-dist))
            for k, (b1, b2), dist in zip(hits.frame, hits.bodies, hits.dist, strict=True)
            if (b1 in mine) != (b2 in mine)
        ]
    return out
