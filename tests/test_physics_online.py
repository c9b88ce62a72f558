"""Tak & Ko's filter online (physics/online.py): the batch's frames, a fixed lag behind,
from the past only."""

from __future__ import annotations

import numpy as np
import pytest

from retarget import detect_contacts
from retarget.core.errors import RetargetError
from retarget.core.frames import OnlineMethod, PoseFrame
from retarget.online.physics import OnlineFilters, OnlinePhysicsFilter
from retarget.physics import body_model
from retarget.physics import filter as pf


@pytest.fixture(scope="module")
def wide(lafan):
    """Frames 100-240 of the walk with the wide-steps goals (feet 15 % of height out)."""
    clip = lafan[100:240]
    contacts = detect_contacts(clip)
    goals = pf.PhysicsGoals(contacts, pf.footplant_goals(clip, contacts, 0.15))
    return clip, body_model(clip.skeleton, 70.0), goals


def stream(method, clip):
    """Every frame through ``method``; (outputs in order, input index of the first)."""
    out, first = [], None
    for k in range(len(clip)):
        frame = method.step(PoseFrame(clip.root_position[k], clip.rotations[k]))
        if frame is not None:
            first = k if first is None else first
            out.append(frame)
    out += method.flush()
    root = np.array([f.root_position for f in out])
    rot = np.array([f.rotations for f in out])
    return root, rot, first


@pytest.mark.parametrize(("passes", "block"), [("1K", 1), ("1D", 1), ("2D+1K", 1), ("2D+1K", 8)])
def test_online_filter_gives_the_batch_frames(wide, passes, block):
    """Every frame equals the batch filter's (form "paper", sliding window of 64) to
    1e-9 of the unit; a dynamic application gives frame t when frame t + 41 is in
    (the window's half, two knots, one central difference), a kinematic one at once;
    Kalman blocks of 8 frames add 7 frames of lag to each."""
    clip, body, goals = wide
    settings = pf.FilterSettings(form="paper")
    batch = pf.physics_filter(clip, body, goals, passes, settings).motion
    online = OnlineFilters(body, goals, passes, settings, fps=clip.fps, block=block)
    assert isinstance(online.stages[0], OnlineMethod)
    root, rot, first = stream(online, clip)
    sequence = pf.parse_passes(passes)
    assert online.lag == 41 * sequence.count("D") + (block - 1) * len(sequence)
    assert first == online.lag and len(root) == len(clip)
    np.testing.assert_allclose(root, batch.root_position, rtol=0, atol=1e-9)
    np.testing.assert_allclose(rot, batch.rotations, rtol=0, atol=1e-9)
    assert np.abs(rot - clip.rotations).max() > 1e-3  # the filter did something


def test_online_filter_reads_no_frame_after_its_lag(wide):
    """Frames changed after input t + lag do not change output t; ``reset`` starts again."""
    clip, body, goals = wide
    online = OnlinePhysicsFilter(body, goals, "D", pf.FilterSettings(form="paper"), fps=clip.fps)
    root, rot, _ = stream(online, clip)
    cut = 90
    bent = clip.replace(
        rotations=np.concatenate([clip.rotations[:cut], clip.rotations[cut:][:, :, [0, 2, 1, 3]]])
    )
    online.reset()
    root2, rot2, _ = stream(online, bent)
    t = cut - online.lag - 1
    np.testing.assert_array_equal(rot2[: t + 1], rot[: t + 1])
    np.testing.assert_array_equal(root2[: t + 1], root[: t + 1])
    assert np.abs(rot2[t + 10] - rot[t + 10]).max() > 0


def test_online_filter_is_the_paper_form_with_a_window(wide):
    clip, body, goals = wide
    with pytest.raises(RetargetError, match="paper's form"):
        OnlinePhysicsFilter(body, goals, "D", pf.FilterSettings(), fps=clip.fps)
    with pytest.raises(RetargetError, match="sliding window"):
        OnlinePhysicsFilter(
            body, goals, "D", pf.FilterSettings(form="paper", window=None), fps=clip.fps
        )
    with pytest.raises(RetargetError, match="'D' or 'K'"):
        OnlinePhysicsFilter(body, goals, "X", pf.FilterSettings(form="paper"), fps=clip.fps)


def test_serve_physics_streams_the_online_filter(lafan):
    """``retarget serve --method physics``: pose messages start ``lag`` frames behind and
    carry the number of the frame they are; each is the online filter's frame on the
    footplants the contact tracker found so far (the same goals given whole)."""
    import json

    from retarget.core.kinematics import positions
    from retarget.humanoid.contacts import Contacts, ContactTracker
    from retarget.methods.physics import PhysicsLive
    from retarget.online.stream import LiveStream, pose_arrays

    clip = lafan[100:190]
    live = PhysicsLive(clip.skeleton, fps=clip.fps, passes="1D+1K")
    stream = LiveStream(live, fps=clip.fps)
    assert live.lag == 41
    got = {}
    for k in range(len(clip)):
        message = {
            "frame": 1000 + k,
            "time": k / clip.fps,
            "root_position": clip.root_position[k].tolist(),
            "rotations": clip.rotations[k].tolist(),
        }
        text = stream.receive(json.dumps(message))
        if k < live.lag:
            assert text is None
            continue
        frame, root, rot, _ = pose_arrays(text)
        assert frame == 1000 + k - live.lag and json.loads(text)["time"] == pytest.approx(
            (k - live.lag) / clip.fps
        )
        got[k - live.lag] = (root, rot)
    assert stream.stats.poses == len(clip) - live.lag

    tracker = ContactTracker(clip.skeleton, fps=clip.fps)
    pos = positions(clip)
    mask = np.array([tracker.step(p) for p in pos])
    points = [int(p) for p in tracker.points]
    contacts = Contacts(
        tracker.points, tracker.sides, mask, tracker.floor, tracker.clearance, tracker.height
    )
    goals = pf.PhysicsGoals(
        contacts, {p: np.where(mask[:, [k]], pos[:, p], np.nan) for k, p in enumerate(points)}
    )
    assert mask.any() and not mask.all()  # plants and swings
    body = body_model(clip.skeleton, 70.0)
    online = OnlineFilters(
        body, goals, "1D+1K", pf.FilterSettings(form="paper"), fps=clip.fps, points=points
    )
    root, rot, _ = stream_frames(online, clip)
    for t, (r, q) in got.items():
        np.testing.assert_allclose(r, root[t], atol=1e-5)
        np.testing.assert_allclose(q, rot[t], atol=1e-6)
    assert np.abs(rot[: len(got)] - clip.rotations[: len(got)]).max() > 1e-3


def stream_frames(method, clip):
    return stream(method, clip)


def test_serve_physics_refuses_a_target_and_an_unknown_load(data_dir, capsys):
    from retarget.cli import main

    walk = str(data_dir / "lafan_walk.bvh")
    assert (
        main(["serve", "--method", "physics", "--performer", walk, "--target-preset", "sally"]) == 2
    )
    assert "no --target" in capsys.readouterr().err
    assert main(["serve", "--method", "physics", "--performer", walk, "--load", "Tail=3"]) == 2
    assert "no joint named 'Tail'" in capsys.readouterr().err


def test_online_filter_holds_a_bounded_past(wide):
    """Over a stream of any length it keeps only the frames a later step reads: the
    prior's neighbours, the frames not yet given or in the next control point's
    window, the control points of the frames not yet given."""
    clip, body, goals = wide
    online = OnlinePhysicsFilter(body, goals, "D", pf.FilterSettings(form="paper"), fps=clip.fps)
    sizes = []
    for k in range(len(clip)):
        online.step(PoseFrame(clip.root_position[k], clip.rotations[k]))
        sizes.append((len(online._root), len(online._out), len(online._controls)))
    late = np.array(sizes[100:])
    assert late[:, 0].max() <= 4
    assert late[:, 1].max() <= online.lag + 64 // 2 + 3 * 4
    assert late[:, 2].max() <= online.lag // 4 + 6
    assert late.max(axis=0).tolist() == np.array(sizes[60:]).max(axis=0).tolist()  # flat
