"""Roles found on every naming convention; characters scaled segment by segment."""

from __future__ import annotations

import numpy as np
import pytest

from retarget import Skeleton
from retarget.characters import PRESETS, make_character
from retarget.errors import RetargetError
from retarget.roles import find_roles, height


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
