"""Tak & Ko's filter online (physics/online.py): the batch's frames, a fixed lag behind,
from the past only."""

from __future__ import annotations

import numpy as np
import pytest

from retarget import detect_contacts
from retarget.errors import RetargetError
from retarget.frames import OnlineMethod, PoseFrame
from retarget.physics import body_model
from retarget.physics import filter as pf
from retarget.physics.online import OnlineFilters, OnlinePhysicsFilter


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


@pytest.mark.parametrize("passes", ["1K", "1D", "2D+1K"])
def test_online_filter_gives_the_batch_frames(wide, passes):
    """Every frame equals the batch filter's (form "paper", sliding window of 64) to
    1e-9 of the unit; a dynamic application gives frame t when frame t + 41 is in
    (the window's half, two knots, one central difference), a kinematic one at once."""
    clip, body, goals = wide
    settings = pf.FilterSettings(form="paper")
    batch = pf.physics_filter(clip, body, goals, passes, settings).motion
    online = OnlineFilters(body, goals, passes, settings, fps=clip.fps)
    assert isinstance(online.stages[0], OnlineMethod)
    root, rot, first = stream(online, clip)
    assert online.lag == 41 * pf.parse_passes(passes).count("D")
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
