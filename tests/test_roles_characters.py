"""Roles found on every naming convention; characters scaled segment by segment."""

from __future__ import annotations

import re

import numpy as np
import pytest

from retarget import Skeleton
from retarget.core.errors import RetargetError
from retarget.humanoid.characters import PRESETS, make_character
from retarget.humanoid.roles import find_roles, height


def named_skeleton(names, parents, lengths=None):
    n = len(names)
    offsets = np.zeros((n, 3))
    offsets[1:, 1] = -1.0 if lengths is None else -np.asarray(lengths, float)
    return Skeleton(tuple(names), parents, offsets)


CONVENTIONS = {
    "mixamo": (
        [
            "mixamorig:Hips",
            "mixamorig:LeftUpLeg",
            "mixamorig:LeftLeg",
            "mixamorig:LeftFoot",
            "mixamorig:LeftToeBase",
            "mixamorig:RightUpLeg",
            "mixamorig:RightLeg",
            "mixamorig:RightFoot",
            "mixamorig:RightToeBase",
            "mixamorig:Spine",
            "mixamorig:Neck",
            "mixamorig:Head",
            "mixamorig:LeftShoulder",
            "mixamorig:LeftArm",
            "mixamorig:LeftForeArm",
            "mixamorig:LeftHand",
            "mixamorig:RightShoulder",
            "mixamorig:RightArm",
            "mixamorig:RightForeArm",
            "mixamorig:RightHand",
        ],
        [-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 9, 12, 13, 14, 9, 16, 17, 18],
        {
            "left_knee": "mixamorig:LeftLeg",
            "right_toe": "mixamorig:RightToeBase",
            "left_elbow": "mixamorig:LeftForeArm",
            "right_clavicle": "mixamorig:RightShoulder",
            "head": "mixamorig:Head",
            "neck": "mixamorig:Neck",
        },
    ),
    "asf": (
        [
            "root",
            "lhipjoint",
            "lfemur",
            "ltibia",
            "lfoot",
            "ltoes",
            "rhipjoint",
            "rfemur",
            "rtibia",
            "rfoot",
            "rtoes",
            "lowerback",
            "upperback",
            "thorax",
            "lowerneck",
            "upperneck",
            "head",
            "lclavicle",
            "lhumerus",
            "lradius",
            "lwrist",
            "lhand",
            "rclavicle",
            "rhumerus",
            "rradius",
            "rwrist",
            "rhand",
        ],
        [
            -1,
            0,
            1,
            2,
            3,
            4,
            0,
            6,
            7,
            8,
            9,
            0,
            11,
            12,
            13,
            14,
            15,
            13,
            17,
            18,
            19,
            20,
            13,
            22,
            23,
            24,
            25,
        ],
        {
            "left_hip": "lfemur",
            "left_knee": "ltibia",
            "left_ankle": "lfoot",
            "left_toe": "ltoes",
            "right_elbow": "rradius",
            "right_wrist": "rwrist",
            "right_shoulder": "rhumerus",
            "head": "head",
        },
    ),
    "rigify_dot_suffix": (
        [
            "pelvis",
            "thigh.L",
            "shin.L",
            "foot.L",
            "thigh.R",
            "shin.R",
            "foot.R",
            "spine",
            "chest",
            "neck",
            "head",
            "upper_arm.L",
            "forearm.L",
            "hand.L",
            "upper_arm.R",
            "forearm.R",
            "hand.R",
        ],
        [-1, 0, 1, 2, 0, 4, 5, 0, 7, 8, 9, 8, 11, 12, 8, 14, 15],
        {"left_knee": "shin.L", "right_ankle": "foot.R", "left_elbow": "forearm.L", "head": "head"},
    ),
    "unreal_suffix": (
        [
            "pelvis",
            "thigh_l",
            "calf_l",
            "foot_l",
            "ball_l",
            "thigh_r",
            "calf_r",
            "foot_r",
            "ball_r",
            "spine_01",
            "neck_01",
            "head",
            "clavicle_l",
            "upperarm_l",
            "lowerarm_l",
            "hand_l",
            "clavicle_r",
            "upperarm_r",
            "lowerarm_r",
            "hand_r",
        ],
        [-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 9, 12, 13, 14, 9, 16, 17, 18],
        {
            "left_knee": "calf_l",
            "left_toe": "ball_l",
            "right_elbow": "lowerarm_r",
            "right_clavicle": "clavicle_r",
            "head": "head",
        },
    ),
    # the side letter glued to the word, Upper/Lower words (Quaternius' robots): an
    # "UpperLeg" is not a knee
    "glued_side_letter": (
        [
            "Body",
            "UpperLegL",
            "LowerLegL",
            "FootL",
            "UpperLegR",
            "LowerLegR",
            "FootR",
            "Abdomen",
            "Neck",
            "Head",
            "ShoulderL",
            "UpperArmL",
            "LowerArmL",
            "PalmL",
            "ShoulderR",
            "UpperArmR",
            "LowerArmR",
            "PalmR",
        ],
        [-1, 0, 1, 2, 0, 4, 5, 0, 7, 8, 7, 10, 11, 12, 7, 14, 15, 16],
        {
            "left_hip": "UpperLegL",
            "left_knee": "LowerLegL",
            "left_ankle": "FootL",
            "right_knee": "LowerLegR",
            "left_shoulder": "UpperArmL",
            "right_elbow": "LowerArmR",
            "right_wrist": "PalmR",
            "left_clavicle": "ShoulderL",
            "head": "Head",
        },
    ),
}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_roles_on_naming_conventions(convention):
    names, parents, expected = CONVENTIONS[convention]
    sk = named_skeleton(names, parents)
    roles = find_roles(sk)
    for role, name in expected.items():
        assert sk.point_names[roles[role]] == name, role


def test_roles_from_bone_lengths_when_names_are_silent():
    # knee/elbow unnamed: the joint between the two longest consecutive bones
    names = [
        "root",
        "L_a1",
        "L_a2",
        "L_a3",
        "L_a4",
        "R_a1",
        "R_a2",
        "R_a3",
        "R_a4",
        "body",
        "top",
        "L_b1",
        "L_b2",
        "L_b3",
        "R_b1",
        "R_b2",
        "R_b3",
    ]
    # the L_/R_ prefixes pair; legs leave the root, arms the body
    parents = [-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 9, 11, 12, 9, 14, 15]
    lengths = [10, 45, 42, 8, 10, 45, 42, 8, 50, 20, 15, 30, 25, 15, 30, 25]
    sk = named_skeleton(names, parents, lengths)
    roles = find_roles(sk)
    assert sk.names[roles["left_knee"]] == "L_a2"
    assert sk.names[roles["left_ankle"]] == "L_a3"
    assert sk.names[roles["right_elbow"]] == "R_b2"
    assert sk.names[roles["head"]] == "top"  # no "head" name: the deepest unsided joint


def test_roles_error_lists_joints():
    sk = named_skeleton(["a", "b", "c"], [-1, 0, 1])
    with pytest.raises(RetargetError, match="joints: a, b, c"):
        find_roles(sk)


def test_roles_on_real_clips(lafan, mocapbank):
    sk = lafan.skeleton
    roles = find_roles(sk)
    assert [
        sk.point_names[roles[r]] for r in ("left_hip", "left_knee", "left_ankle", "left_toe")
    ] == ["LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToe"]
    assert sk.point_names[roles["right_clavicle"]] == "RightShoulder"
    assert sk.point_names[roles["right_shoulder"]] == "RightArm"
    sk = mocapbank.skeleton
    roles = find_roles(sk)
    assert sk.point_names[roles["left_shoulder"]] == "LeftShoulder"
    assert sk.point_names[roles["left_clavicle"]] == "LeftCollar"
    assert sk.point_names[roles["right_knee"]] == "RightKnee"
    assert "left_toe" not in roles and sk.point_names[roles["left_toe_tip"]] == "LeftAnkle_end"


def test_height_is_the_head_to_ankle_bone_path(lafan):
    sk = lafan.skeleton
    by_hand = np.mean(
        [
            sum(
                np.linalg.norm(sk.offsets[sk.index(n)])
                for n in [
                    "Head",
                    "Neck",
                    "Spine2",
                    "Spine1",
                    "Spine",
                    f"{s}UpLeg",
                    f"{s}Leg",
                    f"{s}Foot",
                ]
            )
            for s in ("Left", "Right")
        ]
    )
    assert height(sk) == pytest.approx(by_hand, rel=1e-12)
    assert height(sk) == pytest.approx(166.49, abs=0.01)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_presets_scale_the_named_bones(lafan, preset):
    sk = lafan.skeleton
    char = make_character(sk, preset=preset)
    f = PRESETS[preset]
    ratio = np.linalg.norm(char.point_offsets, axis=1) / np.maximum(
        np.linalg.norm(sk.point_offsets, axis=1), 1e-12
    )
    expect = {
        "LeftLeg": f["thigh"],
        "RightFoot": f["shin"],
        "LeftForeArm": f["upper_arm"],
        "RightHand": f["forearm"],
        "Spine1": f["other"],
        "LeftToe": f["other"],
        "Head": f["other"],
    }
    for name, factor in expect.items():
        assert ratio[sk.index(name)] == pytest.approx(factor), name
    assert char.names == sk.names and char.channels == sk.channels
    # short legs, long torso (blubby) or the reverse (sally)
    legs = sk.path_length("LeftUpLeg", "LeftFoot"), char.path_length("LeftUpLeg", "LeftFoot")
    assert (legs[1] < legs[0]) == (preset == "blubby")


def test_uniform_and_bad_scales(lafan):
    sk = lafan.skeleton
    assert height(make_character(sk, uniform=0.5)) == pytest.approx(height(sk) * 0.5)
    with pytest.raises(RetargetError, match="presets: blubby, sally"):
        make_character(sk, preset="bob")
    with pytest.raises(RetargetError, match="segments"):
        make_character(sk, {"tail": 2.0})
    with pytest.raises(RetargetError, match="positive"):
        make_character(sk, {"thigh": -1.0})


# -- every common convention, full roles --------------------------------------------------


def humanoid(rows, swap, *, unit="cm", along_x=False):
    """A skeleton from ``(name, parent, rest position)`` rows of the centre and left points.

    Each left point (a name ``swap`` changes) gets its right twin just after it: name and
    parent swapped, position mirrored in x (every rig here has its left on +x). A parent
    of ``None`` makes the root; a name ending in ``_end`` an end site. ``along_x``: every
    offset turned onto +x with its length kept, as exported with bone-local axes (the
    rest pose then lies along +x).
    """
    full = []
    for name, parent, pos in rows:
        full.append((name, parent, np.asarray(pos, float)))
        if swap(name) != name:
            full.append((swap(name), swap(parent), np.asarray(pos, float) * [-1, 1, 1]))
    where = {name: pos for name, _, pos in full}

    def offset(parent, pos):
        off = pos - where[parent] if parent else pos
        return [np.linalg.norm(off), 0, 0] if along_x and parent else off

    joints = [r for r in full if not r[0].endswith("_end")]
    sites = [r for r in full if r[0].endswith("_end")]
    names = [r[0] for r in joints]
    return Skeleton(
        tuple(names),
        [names.index(p) if p else -1 for _, p, _ in joints],
        [offset(p, pos) for _, p, pos in joints],
        site_names=[r[0] for r in sites],
        site_parents=[names.index(p) for _, p, _ in sites],
        site_offsets=[offset(p, pos) for _, p, pos in sites] or np.zeros((0, 3)),
        unit=unit,
    )


def rig(rows, swap, trunk, left, spine, **kwargs):
    """The skeleton of :func:`humanoid`, its expected roles (``trunk`` as given, ``left`` on
    both sides: the right's names swapped) and its expected spine."""
    expected = dict(trunk)
    for role, name in left.items():
        expected[f"left_{role}"], expected[f"right_{role}"] = name, swap(name)
    return humanoid(rows, swap, **kwargs), expected, spine


def mixamo(p, root=None):
    """Mixamo (prefix ``p``), Y-up cm, T-pose; end joints, five four-joint fingers, eyes."""
    rows = [(root, None, (0, 0, 0))] if root else []
    rows += [
        (f"{p}Hips", root, (0, 100, 0)),
        (f"{p}Spine", f"{p}Hips", (0, 110, 1)),
        (f"{p}Spine1", f"{p}Spine", (0, 122, 1)),
        (f"{p}Spine2", f"{p}Spine1", (0, 135, 0)),
        (f"{p}Neck", f"{p}Spine2", (0, 150, 0)),
        (f"{p}Head", f"{p}Neck", (0, 160, 2)),
        (f"{p}HeadTop_End", f"{p}Head", (0, 178, 2)),
        (f"{p}LeftEye", f"{p}Head", (3, 166, 9)),
        (f"{p}LeftShoulder", f"{p}Spine2", (6, 145, 0)),
        (f"{p}LeftArm", f"{p}LeftShoulder", (18, 145, 0)),
        (f"{p}LeftForeArm", f"{p}LeftArm", (45, 145, 0)),
        (f"{p}LeftHand", f"{p}LeftForeArm", (70, 145, 0)),
    ]
    for finger, x, z, step in [
        ("Thumb", 73, 4, 2.5),
        ("Index", 79, 2.5, 3),
        ("Middle", 80, 0.5, 3.5),
        ("Ring", 79.5, -1.5, 3),
        ("Pinky", 78.5, -3.5, 2.5),
    ]:
        for k in range(1, 5):
            parent = f"{p}LeftHand{finger}{k - 1}" if k > 1 else f"{p}LeftHand"
            rows.append((f"{p}LeftHand{finger}{k}", parent, (x + step * (k - 1), 145, z)))
    rows += [
        (f"{p}LeftUpLeg", f"{p}Hips", (9, 94, 0)),
        (f"{p}LeftLeg", f"{p}LeftUpLeg", (9, 52, 0)),
        (f"{p}LeftFoot", f"{p}LeftLeg", (9, 9, -2)),
        (f"{p}LeftToeBase", f"{p}LeftFoot", (9, 2, 12)),
        (f"{p}LeftToe_End", f"{p}LeftToeBase", (9, 2, 20)),
    ]
    trunk = {"hips": "Hips", "neck": "Neck", "head": "Head", "head_top": "HeadTop_End"}
    left = {
        **{"hip": "LeftUpLeg", "knee": "LeftLeg", "ankle": "LeftFoot"},
        **{"toe": "LeftToeBase", "toe_tip": "LeftToe_End", "clavicle": "LeftShoulder"},
        **{"shoulder": "LeftArm", "elbow": "LeftForeArm", "wrist": "LeftHand"},
        "hand_tip": "LeftHandMiddle4",
    }
    return rig(
        rows,
        lambda n: n and n.replace("Left", "Right"),
        {r: p + n for r, n in trunk.items()},
        {r: p + n for r, n in left.items()},
        tuple(p + n for n in ("Spine", "Spine1", "Spine2")),
    )


def blender(prefix, side, deform):
    """Blender, Z-up metres facing -y, A-pose: rigify deform bones (``deform``: fingers and the
    end sites a BVH export adds) or a bare metarig (a heel bone, no sites)."""

    def b(name):
        return f"{prefix}{name}{side}"

    spine = [f"{prefix}spine"] + [f"{prefix}spine.{k:03d}" for k in range(1, 7)]
    rows = [(spine[0], None, (0, 0.02, 1.0))]
    for k, z in enumerate((1.10, 1.20, 1.32, 1.50, 1.56, 1.62), start=1):
        rows.append((spine[k], spine[k - 1], (0, 0.02, z)))
    rows += [
        (b("pelvis"), spine[0], (0.02, 0.0, 1.02)),
        (b("thigh"), spine[0], (0.1, 0.01, 0.96)),
        (b("shin"), b("thigh"), (0.1, 0.0, 0.5)),
        (b("foot"), b("shin"), (0.1, 0.04, 0.07)),
        (b("toe"), b("foot"), (0.1, -0.09, 0.01)),
        (b("breast"), spine[3], (0.1, -0.1, 1.35)),
        (b("shoulder"), spine[3], (0.02, -0.04, 1.45)),
        (b("upper_arm"), b("shoulder"), (0.17, 0.02, 1.44)),
        (b("forearm"), b("upper_arm"), (0.35, 0.04, 1.22)),
        (b("hand"), b("forearm"), (0.51, 0.0, 1.02)),
    ]
    left = {"hip": b("thigh"), "knee": b("shin"), "ankle": b("foot"), "toe": b("toe")}
    left |= {"clavicle": b("shoulder"), "shoulder": b("upper_arm"), "elbow": b("forearm")}
    left |= {"wrist": b("hand"), "toe_tip": b("toe"), "hand_tip": b("hand")}
    trunk = {"hips": spine[0], "neck": spine[4], "head": spine[6]}
    if deform:
        rows += [
            (b("palm.01"), b("hand"), (0.52, -0.01, 1.0)),
            (b("f_index.01"), b("palm.01"), (0.56, -0.02, 0.96)),
            (b("f_index.02"), b("f_index.01"), (0.58, -0.02, 0.93)),
            (b("f_index.03"), b("f_index.02"), (0.595, -0.02, 0.91)),
            (b("f_index.03") + "_end", b("f_index.03"), (0.61, -0.02, 0.895)),
            (b("thumb.01"), b("palm.01"), (0.53, -0.04, 0.99)),
            (b("thumb.02"), b("thumb.01"), (0.545, -0.06, 0.97)),
            (b("thumb.03"), b("thumb.02"), (0.555, -0.07, 0.955)),
            (b("thumb.03") + "_end", b("thumb.03"), (0.56, -0.08, 0.945)),
            (b("toe") + "_end", b("toe"), (0.1, -0.15, 0.01)),
            (spine[6] + "_end", spine[6], (0, 0.02, 1.82)),
            (b("pelvis") + "_end", b("pelvis"), (0.1, -0.05, 1.05)),
            (b("breast") + "_end", b("breast"), (0.1, -0.15, 1.33)),
        ]
        left |= {"toe_tip": b("toe") + "_end", "hand_tip": b("f_index.03") + "_end"}
        trunk["head_top"] = spine[6] + "_end"
    else:
        rows.append((b("heel.02"), b("foot"), (0.07, 0.07, 0.0)))
    swap = {".L": ".R", "_L": "_R"}[side]
    return rig(
        rows,
        lambda n: n and re.sub(re.escape(side) + r"(?=$|[._])", swap, n),
        trunk,
        left,
        (spine[1], spine[2], spine[3], spine[5]),
        unit="m",
    )


def smpl(x):
    """SMPL (``Pelvis, L_Hip``, 24 joints in SMPL order) or SMPL-X (``pelvis, left_hip``, jaw,
    eyes, 3-joint fingers), Y-up metres, T-pose."""

    def n(part):
        if part[0] == "L":
            return f"left_{part[2:].lower()}" if x else part
        return part.lower() if x else part

    rows = [
        (n("Pelvis"), None, (0, 0.93, 0)),
        (n("L_Hip"), n("Pelvis"), (0.06, 0.84, -0.01)),
        (n("Spine1"), n("Pelvis"), (0, 1.04, -0.02)),
        (n("L_Knee"), n("L_Hip"), (0.1, 0.46, -0.01)),
        (n("Spine2"), n("Spine1"), (0, 1.17, 0.01)),
        (n("L_Ankle"), n("L_Knee"), (0.09, 0.06, -0.04)),
        (n("Spine3"), n("Spine2"), (0, 1.23, 0.01)),
        (n("L_Foot"), n("L_Ankle"), (0.12, 0.0, 0.08)),
        (n("Neck"), n("Spine3"), (0, 1.44, -0.03)),
        (n("L_Collar"), n("Spine3"), (0.08, 1.35, -0.01)),
        (n("Head"), n("Neck"), (0, 1.51, 0.02)),
        (n("L_Shoulder"), n("L_Collar"), (0.18, 1.38, -0.02)),
        (n("L_Elbow"), n("L_Shoulder"), (0.43, 1.37, -0.04)),
        (n("L_Wrist"), n("L_Elbow"), (0.68, 1.37, -0.03)),
    ]
    if x:
        rows += [("jaw", "head", (0, 1.5, 0.05)), ("left_eye_smplhf", "head", (0.03, 1.58, 0.08))]
        for finger, dx, z in [
            ("index", 0.08, 0.02),
            ("middle", 0.095, 0.0),
            ("pinky", 0.07, -0.04),
            ("ring", 0.08, -0.02),
            ("thumb", 0.03, 0.04),
        ]:
            for k in range(1, 4):
                parent = f"left_{finger}{k - 1}" if k > 1 else "left_wrist"
                rows.append((f"left_{finger}{k}", parent, (0.68 + dx + 0.025 * k, 1.36, z)))
    else:
        rows.append(("L_Hand", "L_Wrist", (0.77, 1.36, -0.04)))
    left = {"hip": "L_Hip", "knee": "L_Knee", "ankle": "L_Ankle", "toe": "L_Foot"}
    left |= {"toe_tip": "L_Foot", "clavicle": "L_Collar", "shoulder": "L_Shoulder"}
    left |= {"elbow": "L_Elbow", "wrist": "L_Wrist", "hand_tip": "L_Hand"}
    left = {r: n(j) for r, j in left.items()}
    if x:
        left["hand_tip"] = "left_middle3"
    swap = (r"^left_", "right_") if x else (r"^L_", "R_")
    return rig(
        rows,
        lambda j: j and re.sub(*swap, j),
        {"hips": n("Pelvis"), "neck": n("Neck"), "head": n("Head")},
        left,
        (n("Spine1"), n("Spine2"), n("Spine3")),
        unit="m",
    )


def unreal(version, along_x):
    """Unreal mannequin, Z-up cm, A-pose: UE5 (``spine_01..05``, ``neck_01, neck_02``, finger
    metacarpals) or UE4 (``spine_01..03``, ``neck_01``); twist bones and the IK branches."""
    spines = [f"spine_{k:02d}" for k in range(1, 6 if version == 5 else 4)]
    necks = ["neck_01", "neck_02"] if version == 5 else ["neck_01"]
    rows = [("root", None, (0, 0, 0)), ("pelvis", "root", (0, 0, 95))]
    for k, name in enumerate(spines):
        rows.append((name, rows[-1][0], (0, 0, 102 + 32 * k / (len(spines) - 1))))
    for k, name in enumerate(necks):
        rows.append((name, rows[-1][0], (0, 0, 145 + 5 * k)))
    rows += [
        ("head", necks[-1], (0, 0, 157)),
        ("clavicle_l", spines[-1], (4, -2, 140)),
        ("upperarm_l", "clavicle_l", (17, 0, 140)),
        ("upperarm_twist_01_l", "upperarm_l", (20, 0, 137)),
        ("lowerarm_l", "upperarm_l", (36, 0, 121)),
        ("lowerarm_twist_01_l", "lowerarm_l", (45, 0, 112)),
        ("hand_l", "lowerarm_l", (54, 0, 103)),
        ("thumb_01_l", "hand_l", (56, -4, 102)),
        ("thumb_02_l", "thumb_01_l", (58, -6, 100)),
        ("thumb_03_l", "thumb_02_l", (60, -7, 98)),
    ]
    for finger, y, ends in [("index", -2, (97, 94.5, 92.5)), ("middle", 0, (96, 93, 90.5))]:
        parent = "hand_l"
        if version == 5:
            rows.append((f"{finger}_metacarpal_l", parent, (56, y, 101)))
            parent = f"{finger}_metacarpal_l"
        for k, z in enumerate(ends, start=1):
            rows.append((f"{finger}_{k:02d}_l", parent, (157 - z, y, z)))
            parent = f"{finger}_{k:02d}_l"
    rows += [
        ("thigh_l", "pelvis", (10, 0, 92)),
        ("thigh_twist_01_l", "thigh_l", (10, 0, 72)),
        ("calf_l", "thigh_l", (10, 1, 50)),
        ("calf_twist_01_l", "calf_l", (10, 1, 30)),
        ("foot_l", "calf_l", (10, 0, 9)),
        ("ball_l", "foot_l", (10, -13, 2)),
        ("ik_foot_root", "root", (0, 0, 0)),
        ("ik_foot_l", "ik_foot_root", (10, 0, 9)),
        ("ik_hand_root", "root", (0, 0, 0)),
        ("ik_hand_gun", "ik_hand_root", (-54, 0, 103)),
        ("ik_hand_l", "ik_hand_gun", (54, 0, 103)),
    ]
    left = {"hip": "thigh_l", "knee": "calf_l", "ankle": "foot_l", "toe": "ball_l"}
    left |= {"toe_tip": "ball_l", "clavicle": "clavicle_l", "shoulder": "upperarm_l"}
    left |= {"elbow": "lowerarm_l", "wrist": "hand_l", "hand_tip": "middle_03_l"}
    return rig(
        rows,
        lambda n: n and re.sub(r"_l$", "_r", n),
        {"hips": "pelvis", "neck": "neck_01", "head": "head"},
        left,
        (*spines, *necks[1:]),
        along_x=along_x,
    )


def cmu_daz_friendly():
    """The CMU BVH conversion for Daz/Poser, Y-up: ``hip, abdomen, chest``, ``lButtock`` above
    ``lThigh``, ``lShldr``, two-joint fingers, eyes, end sites."""
    rows = [
        ("hip", None, (0, 95, 0)),
        ("abdomen", "hip", (0, 105, 0)),
        ("chest", "abdomen", (0, 122, 0)),
        ("neck", "chest", (0, 142, 0)),
        ("head", "neck", (0, 150, 0)),
        ("head_end", "head", (0, 168, 0)),
        ("leftEye", "head", (3, 156, 8)),
        ("leftEye_end", "leftEye", (3, 156, 10)),
        ("lCollar", "chest", (2, 140, 0)),
        ("lShldr", "lCollar", (17, 140, 0)),
        ("lForeArm", "lShldr", (45, 140, 0)),
        ("lHand", "lForeArm", (70, 140, 0)),
        ("lThumb1", "lHand", (72, 139, 3)),
        ("lThumb2", "lThumb1", (75, 139, 4)),
        ("lThumb2_end", "lThumb2", (77, 139, 5)),
        ("lIndex1", "lHand", (78, 140, 2)),
        ("lIndex2", "lIndex1", (81, 140, 2)),
        ("lIndex2_end", "lIndex2", (83, 140, 2)),
        ("lMid1", "lHand", (79, 140, 0)),
        ("lMid2", "lMid1", (82.5, 140, 0)),
        ("lMid2_end", "lMid2", (85, 140, 0)),
        ("lButtock", "hip", (8, 92, 0)),
        ("lThigh", "lButtock", (9, 88, 0)),
        ("lShin", "lThigh", (9, 48, 0)),
        ("lFoot", "lShin", (9, 8, 0)),
        ("lFoot_end", "lFoot", (9, 1, 14)),
    ]
    left = {"hip": "lThigh", "knee": "lShin", "ankle": "lFoot", "toe_tip": "lFoot_end"}
    left |= {"clavicle": "lCollar", "shoulder": "lShldr", "elbow": "lForeArm"}
    left |= {"wrist": "lHand", "hand_tip": "lMid2_end"}
    return rig(
        rows,
        lambda n: n and re.sub(r"^l(?=[A-Z])", "r", n.replace("left", "right")),
        {"hips": "hip", "neck": "neck", "head": "head", "head_top": "head_end"},
        left,
        ("abdomen", "chest"),
    )


def character_creator():
    """Character Creator 4, Y-up cm, T-pose: legs under ``CC_Base_Pelvis``, spine under
    ``CC_Base_Hip``, twist and share bones beside the limb joints, ``NeckTwist`` necks."""
    rows = [
        ("CC_Base_BoneRoot", None, (0, 0, 0)),
        ("CC_Base_Hip", "CC_Base_BoneRoot", (0, 100, 0)),
        ("CC_Base_Pelvis", "CC_Base_Hip", (0, 100, -1)),
        ("CC_Base_L_Thigh", "CC_Base_Pelvis", (9, 94, 0)),
        ("CC_Base_L_ThighTwist01", "CC_Base_L_Thigh", (9, 80, 0)),
        ("CC_Base_L_Calf", "CC_Base_L_Thigh", (9, 52, 1)),
        ("CC_Base_L_CalfTwist01", "CC_Base_L_Calf", (9, 30, 0)),
        ("CC_Base_L_Foot", "CC_Base_L_Calf", (9, 9, -2)),
        ("CC_Base_L_ToeBase", "CC_Base_L_Foot", (9, 2, 12)),
        ("CC_Base_Waist", "CC_Base_Hip", (0, 106, 0)),
        ("CC_Base_Spine01", "CC_Base_Waist", (0, 118, 0)),
        ("CC_Base_Spine02", "CC_Base_Spine01", (0, 132, 0)),
        ("CC_Base_NeckTwist01", "CC_Base_Spine02", (0, 150, 0)),
        ("CC_Base_NeckTwist02", "CC_Base_NeckTwist01", (0, 155, 0)),
        ("CC_Base_Head", "CC_Base_NeckTwist02", (0, 161, 0)),
        ("CC_Base_L_Clavicle", "CC_Base_Spine02", (3, 146, 0)),
        ("CC_Base_L_Upperarm", "CC_Base_L_Clavicle", (17, 145, 0)),
        ("CC_Base_L_UpperarmTwist01", "CC_Base_L_Upperarm", (26, 145, 0)),
        ("CC_Base_L_Forearm", "CC_Base_L_Upperarm", (44, 145, 0)),
        ("CC_Base_L_ElbowShareBone", "CC_Base_L_Forearm", (45, 145, -2)),
        ("CC_Base_L_ForearmTwist01", "CC_Base_L_Forearm", (56, 145, 0)),
        ("CC_Base_L_Hand", "CC_Base_L_Forearm", (69, 145, 0)),
        ("CC_Base_L_Thumb1", "CC_Base_L_Hand", (71, 144, 3)),
        ("CC_Base_L_Thumb2", "CC_Base_L_Thumb1", (74, 144, 4)),
        ("CC_Base_L_Index1", "CC_Base_L_Hand", (77, 145, 2)),
        ("CC_Base_L_Index2", "CC_Base_L_Index1", (80, 145, 2)),
        ("CC_Base_L_Mid1", "CC_Base_L_Hand", (78, 145, 0)),
        ("CC_Base_L_Mid2", "CC_Base_L_Mid1", (81.5, 145, 0)),
        ("CC_Base_L_Mid3", "CC_Base_L_Mid2", (84, 145, 0)),
    ]
    left = {"hip": "Thigh", "knee": "Calf", "ankle": "Foot", "toe": "ToeBase"}
    left |= {"toe_tip": "ToeBase", "clavicle": "Clavicle", "shoulder": "Upperarm"}
    left |= {"elbow": "Forearm", "wrist": "Hand", "hand_tip": "Mid3"}
    return rig(
        rows,
        lambda n: n and n.replace("_L_", "_R_"),
        {"hips": "CC_Base_Hip", "neck": "CC_Base_NeckTwist01", "head": "CC_Base_Head"},
        {r: f"CC_Base_L_{n}" for r, n in left.items()},
        ("CC_Base_Waist", "CC_Base_Spine01", "CC_Base_Spine02", "CC_Base_NeckTwist02"),
    )


def biped():
    """3ds Max Biped, Z-up cm facing -y: thighs under ``Bip01 Spine``, clavicles under
    ``Bip01 Neck``, ``Nub`` end joints."""
    rows = [
        ("Bip01", None, (0, 0, 95)),
        ("Bip01 Pelvis", "Bip01", (0, 0, 95)),
        ("Bip01 Spine", "Bip01 Pelvis", (0, 0, 104)),
        ("Bip01 L Thigh", "Bip01 Spine", (9, 0, 95)),
        ("Bip01 L Calf", "Bip01 L Thigh", (9, 0, 52)),
        ("Bip01 L Foot", "Bip01 L Calf", (9, 1, 9)),
        ("Bip01 L Toe0", "Bip01 L Foot", (9, -12, 1)),
        ("Bip01 L Toe0Nub", "Bip01 L Toe0", (9, -19, 1)),
        ("Bip01 Spine1", "Bip01 Spine", (0, 0, 116)),
        ("Bip01 Spine2", "Bip01 Spine1", (0, 0, 128)),
        ("Bip01 Neck", "Bip01 Spine2", (0, 0, 146)),
        ("Bip01 Head", "Bip01 Neck", (0, 0, 155)),
        ("Bip01 HeadNub", "Bip01 Head", (0, 0, 175)),
        ("Bip01 L Clavicle", "Bip01 Neck", (2, 0, 146)),
        ("Bip01 L UpperArm", "Bip01 L Clavicle", (17, 0, 144)),
        ("Bip01 L Forearm", "Bip01 L UpperArm", (44, 0, 144)),
        ("Bip01 L Hand", "Bip01 L Forearm", (69, 0, 144)),
        ("Bip01 L Finger0", "Bip01 L Hand", (71, -3, 143)),
        ("Bip01 L Finger01", "Bip01 L Finger0", (74, -4, 143)),
        ("Bip01 L Finger0Nub", "Bip01 L Finger01", (76, -5, 143)),
        ("Bip01 L Finger1", "Bip01 L Hand", (77, -1, 144)),
        ("Bip01 L Finger11", "Bip01 L Finger1", (80.5, -1, 144)),
        ("Bip01 L Finger1Nub", "Bip01 L Finger11", (83, -1, 144)),
    ]
    left = {"hip": "Thigh", "knee": "Calf", "ankle": "Foot", "toe": "Toe0"}
    left |= {"toe_tip": "Toe0Nub", "clavicle": "Clavicle", "shoulder": "UpperArm"}
    left |= {"elbow": "Forearm", "wrist": "Hand", "hand_tip": "Finger1Nub"}
    return rig(
        rows,
        lambda n: n and n.replace(" L ", " R "),
        {"hips": "Bip01 Spine", "neck": "Bip01 Neck"}
        | {"head": "Bip01 Head", "head_top": "Bip01 HeadNub"},
        {r: f"Bip01 L {n}" for r, n in left.items()},
        ("Bip01 Spine1", "Bip01 Spine2"),
    )


def robot_waist():
    """A humanoid robot's method skeleton (iCub's, its hinges gathered), Z-up cm facing -y:
    the torso's ball at the pelvis, the shoulders and the head's ball hanging from it.
    The head hangs from the chest, as from a Biped's neck, but the chest stands low in
    the trunk: a waist, the spine, no neck."""
    rows = [
        ("base_link", None, (0, 0, 60)),
        ("torso_pitch", "base_link", (0, 0, 60)),
        ("neck_pitch", "torso_pitch", (0, 0, 83)),
        ("neck_yaw_end", "neck_pitch", (0, 0, 95)),
        ("l_shoulder_pitch", "torso_pitch", (11, 0, 78)),
        ("l_elbow", "l_shoulder_pitch", (11, 0, 63)),
        ("l_wrist_prosup", "l_elbow", (11, 0, 49)),
        ("l_wrist_yaw_end", "l_wrist_prosup", (11, 0, 43)),
        ("l_hip_pitch", "base_link", (7, 0, 48)),
        ("l_knee", "l_hip_pitch", (7, 0, 26)),
        ("l_ankle_pitch", "l_knee", (7, 0, 4)),
        ("l_ankle_roll_end", "l_ankle_pitch", (7, -10, 0)),
    ]
    left = {"hip": "hip_pitch", "knee": "knee", "ankle": "ankle_pitch"}
    left |= {"toe_tip": "ankle_roll_end", "shoulder": "shoulder_pitch", "elbow": "elbow"}
    left |= {"wrist": "wrist_prosup", "hand_tip": "wrist_yaw_end"}
    return rig(
        rows,
        lambda n: n and (("r_" + n[2:]) if n.startswith("l_") else n),
        {"hips": "base_link", "head": "neck_pitch", "head_top": "neck_yaw_end"},
        {r: f"l_{n}" for r, n in left.items()},
        ("torso_pitch",),
    )


def cmu_bvh():
    """The CMU BVH conversion (MotionBuilder-friendly), Y-up: ``LHipJoint``, ``LowerBack``,
    ``Neck1``, ``LeftFingerBase``, ``LThumb``, end sites."""
    rows = [
        ("Hips", None, (0, 95, 0)),
        ("LHipJoint", "Hips", (0, 95, 0)),
        ("LeftUpLeg", "LHipJoint", (9, 89, 0)),
        ("LeftLeg", "LeftUpLeg", (9, 49, 0)),
        ("LeftFoot", "LeftLeg", (9, 8, 0)),
        ("LeftToeBase", "LeftFoot", (9, 2, 12)),
        ("LeftToeBase_end", "LeftToeBase", (9, 2, 18)),
        ("LowerBack", "Hips", (0, 97, 0)),
        ("Spine", "LowerBack", (0, 109, 0)),
        ("Spine1", "Spine", (0, 121, 0)),
        ("Neck", "Spine1", (0, 140, 0)),
        ("Neck1", "Neck", (0, 146, 0)),
        ("Head", "Neck1", (0, 152, 0)),
        ("Head_end", "Head", (0, 170, 0)),
        ("LeftShoulder", "Spine1", (2, 138, 0)),
        ("LeftArm", "LeftShoulder", (17, 138, 0)),
        ("LeftForeArm", "LeftArm", (45, 138, 0)),
        ("LeftHand", "LeftForeArm", (70, 138, 0)),
        ("LeftFingerBase", "LeftHand", (77, 138, 0)),
        ("LeftHandIndex1", "LeftFingerBase", (80, 138, 0)),
        ("LeftHandIndex1_end", "LeftHandIndex1", (84, 138, 0)),
        ("LThumb", "LeftHand", (72, 138, 3)),
        ("LThumb_end", "LThumb", (76, 138, 5)),
    ]
    left = {"hip": "LeftUpLeg", "knee": "LeftLeg", "ankle": "LeftFoot", "toe": "LeftToeBase"}
    left |= {"toe_tip": "LeftToeBase_end", "clavicle": "LeftShoulder", "shoulder": "LeftArm"}
    left |= {"elbow": "LeftForeArm", "wrist": "LeftHand", "hand_tip": "LeftHandIndex1_end"}
    return rig(
        rows,
        lambda n: n and re.sub(r"^L(?=[A-Z])", "R", n.replace("Left", "Right")),
        {"hips": "Hips", "neck": "Neck", "head": "Head", "head_top": "Head_end"},
        left,
        ("LowerBack", "Spine", "Spine1", "Neck1"),
    )


RIGS = {
    "mixamo": lambda: mixamo("mixamorig:"),
    "mixamo_prefix1_under_root": lambda: mixamo("mixamorig1:", root="root"),
    "mixamo_no_prefix": lambda: mixamo(""),
    "rigify_deform_zup_m_apose": lambda: blender("DEF-", ".L", deform=True),
    "blender_metarig_dot": lambda: blender("", ".L", deform=False),
    "blender_metarig_underscore": lambda: blender("", "_L", deform=False),
    "smpl": lambda: smpl(x=False),
    "smplx": lambda: smpl(x=True),
    "unreal5_rest_along_x": lambda: unreal(5, along_x=True),
    "unreal4": lambda: unreal(4, along_x=False),
    "cmu_daz_friendly_bvh": cmu_daz_friendly,
    "character_creator4": character_creator,
    "3dsmax_biped": biped,
    "robot_waist_gathered": robot_waist,
    "cmu_bvh": cmu_bvh,
}

#: Joints no limb role but a hand tip may be: twist, IK, finger, eye, corrective bones.
NOT_ROLES = re.compile(
    r"twist|ik_|metacarpal|finger|thumb|index|mid|ring|pinky|palm|eye"
    r"|share|breast|heel|pelvis[._]",
    re.IGNORECASE,
)


@pytest.mark.parametrize("name", list(RIGS))
def test_full_roles_on_every_convention(name):
    sk, expected, spine = RIGS[name]()
    roles = find_roles(sk)
    found = {role: sk.point_names[p] for role, p in roles.items()}
    assert found == expected
    assert tuple(sk.names[j] for j in roles.spine) == spine
    for side in ("left", "right"):  # each the parent of the next, as the limb IK needs
        for upper, middle, lower in [("hip", "knee", "ankle"), ("shoulder", "elbow", "wrist")]:
            top, mid, low = (roles[f"{side}_{r}"] for r in (upper, middle, lower))
            assert sk.parents[mid] == top and sk.parents[low] == mid
    tips = {found["left_hand_tip"], found["right_hand_tip"]}  # may be finger tips
    limbs = {n for r, n in found.items() if r.startswith(("left", "right"))} - tips
    assert not [n for n in limbs if NOT_ROLES.search(n)]


# -- what the names leave open ---------------------------------------------------------------


def anonymous(sk, turn):
    """The skeleton with neutral names (``joint0, …``, ``site0, …``), its rest pose turned."""
    return Skeleton(
        tuple(f"joint{j}" for j in range(sk.num_joints)),
        sk.parents,
        sk.offsets @ np.transpose(turn),
        site_names=[f"site{s}" for s in range(sk.num_sites)],
        site_parents=sk.site_parents,
        site_offsets=sk.site_offsets @ np.transpose(turn),
        unit=sk.unit,
    )


#: Rest-pose frames (rotations of the rigs' y-up, facing +z frame) and a mirror image.
FRAMES = {
    "y_up_facing_z": np.eye(3),
    "z_up_facing_minus_y": np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]),
    "y_up_facing_x": np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]]),
    "mirrored": np.diag([-1.0, 1, 1]),
}


@pytest.mark.parametrize("frame", list(FRAMES))
@pytest.mark.parametrize("name", ["smpl", "mixamo"])
def test_neutral_names_take_sides_from_the_rest_pose(name, frame):
    sk = RIGS[name]()[0]
    named = find_roles(sk)
    roles = find_roles(anonymous(sk, FRAMES[frame]))
    # the same points (Mixamo's HeadTop_End: a joint moving nothing, beside the eyes)
    expected = dict(named)
    if frame == "mirrored":  # the mirror image's left is the right
        other = {"left": "right", "right": "left"}
        expected = {
            re.sub(r"^left|^right", lambda m: other[m[0]], r): p for r, p in expected.items()
        }
    assert dict(roles) == expected
    assert roles.spine == named.spine


def test_neutral_names_on_a_real_clip(mocapbank):
    sk = mocapbank.skeleton
    named = find_roles(sk)
    roles = find_roles(anonymous(sk, np.eye(3)))
    assert dict(roles) == dict(named) and roles.spine == named.spine


def test_neutral_names_need_a_rest_pose_that_shows_the_sides():
    # the rest pose lies along +x: nothing tells left from right
    with pytest.raises(RetargetError, match=r"does not show which.*joints: joint0, joint1"):
        find_roles(anonymous(RIGS["unreal5_rest_along_x"]()[0], np.eye(3)))


def test_hierarchy_finds_the_trunk_when_names_are_silent():
    # names silent about the head and neck (``head_aim``, a look-at helper, is no head:
    # the hierarchy puts it beside the chest, not above it), knees and elbows; the head
    # hangs from the joint holding the arms, which is then the neck
    rows = [
        ("C_root", None, (0, 100, 0)),
        ("C_head_aim", "C_root", (0, 100, 30)),
        ("L_a1", "C_root", (10, 95, 0)),
        ("L_a2", "L_a1", (10, 51, 0)),
        ("L_a3", "L_a2", (10, 9, 0)),
        ("L_a4", "L_a3", (10, 1, 12)),
        ("C_body", "C_root", (0, 140, 0)),
        ("C_top", "C_body", (0, 160, 0)),
        ("L_b1", "C_body", (5, 140, 0)),
        ("L_b2", "L_b1", (18, 140, 0)),
        ("L_b3", "L_b2", (45, 140, 0)),
        ("L_b4", "L_b3", (70, 140, 0)),
        ("L_b5", "L_b4", (78, 140, 0)),
    ]
    sk, expected, spine = rig(
        rows,
        lambda n: n and re.sub(r"^L_", "R_", n),
        {"hips": "C_root", "head": "C_top", "neck": "C_body"},
        {"hip": "L_a1", "knee": "L_a2", "ankle": "L_a3", "toe": "L_a4", "toe_tip": "L_a4"}
        | {"clavicle": "L_b1", "shoulder": "L_b2", "elbow": "L_b3", "wrist": "L_b4"}
        | {"hand_tip": "L_b5"},
        (),
    )
    roles = find_roles(sk)
    assert {r: sk.point_names[p] for r, p in roles.items()} == expected
    assert roles.spine == spine
