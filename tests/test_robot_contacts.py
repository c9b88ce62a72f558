"""Links into each other by MuJoCo's own collision detection (retarget.targets.robot.contacts): the
pairs left out (the world, a parent, pairs touching at the zero configuration), the
signed distances and surface points against shapes whose answer is known."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from retarget.targets.robot.contacts import resting_pairs, self_contacts

# a base (free) with a ball; an arm on a hinge about y whose second link, a ball of
# 0.05 m, swings down into the base's ball as the shoulder turns; a leg whose second
# link's ball is 1 cm into the base's at the zero configuration (by design: left out)
_XML = """
<mujoco>
  <worldbody>
    <body name="base">
      <freejoint/>
      <geom name="base_ball" type="sphere" size="0.1"/>
      <body name="upper" pos="0 0 0.15">
        <joint name="shoulder" type="hinge" axis="0 1 0"/>
        <geom name="upper_ball" type="sphere" size="0.03"/>
        <body name="lower" pos="0.2 0 0">
          <joint name="elbow" type="hinge" axis="0 1 0"/>
          <geom name="lower_ball" type="sphere" size="0.05"/>
        </body>
      </body>
      <body name="stand" pos="0 0 -0.2">
        <joint name="hip" type="hinge" axis="1 0 0"/>
        <geom name="stand_ball" type="sphere" size="0.02"/>
        <body name="foot" pos="0 0 0.05">
          <joint name="ankle" type="hinge" axis="1 0 0"/>
          <geom name="foot_ball" type="sphere" size="0.06"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_string(_XML)


def _qpos(model, shoulder: float, elbow: float = 0.0) -> np.ndarray:
    q = np.asarray(model.qpos0, dtype=float).copy()
    q[model.joint("shoulder").qposadr[0]] = shoulder
    q[model.joint("elbow").qposadr[0]] = elbow
    return q


def test_pairs_touching_at_rest_are_left_out(model):
    base, foot = model.body("base").id, model.body("foot").id
    assert resting_pairs(model) == {(min(base, foot), max(base, foot))}  # 0.15 < 0.1 + 0.06
    found = self_contacts(model, _qpos(model, 0.0)[None])
    assert found.num_contacts == 0  # the one contact there is the resting pair's
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_collision(model, data)
    assert data.ncon == 1


def test_a_link_swung_into_another_is_found_with_its_depth(model):
    """The lower ball's centre at (0.2 cos a, 0, 0.15 − 0.2 sin a) from the base's after
    the shoulder turns by ``a`` about y (a positive turn about y takes +x down); at the
    angle where it is 0.13 m from the base's centre it is 0.02 m into the base's ball."""
    target = 0.13
    # |(0.2 cos t, 0.15 − 0.2 sin t)| = target, t the downward swing
    t = np.arcsin((0.2**2 + 0.15**2 - target**2) / (2 * 0.2 * 0.15))
    q = np.stack([_qpos(model, 0.0), _qpos(model, t)])
    found = self_contacts(model, q, deeper_than=1e-3)
    assert found.num_contacts == 1 and found.frame[0] == 1
    names = {model.body(int(b)).name for b in found.bodies[0]}
    assert names == {"base", "lower"}
    np.testing.assert_allclose(found.dist[0], target - 0.15, atol=1e-9)
    s1, s2 = found.surfaces()
    np.testing.assert_allclose((found.normal * (s2 - s1)).sum(-1), found.dist, atol=1e-12)
    # the base's surface point lies on its ball, the lower's on its own
    first = model.body(int(found.bodies[0, 0])).name
    r1, r2 = (0.1, 0.05) if first == "base" else (0.05, 0.1)
    data = mujoco.MjData(model)
    data.qpos[:] = q[1]
    mujoco.mj_kinematics(model, data)
    c1 = data.xpos[found.bodies[0, 0]]
    c2 = data.xpos[found.bodies[0, 1]]
    np.testing.assert_allclose(np.linalg.norm(s1[0] - c1), r1, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(s2[0] - c2), r2, atol=1e-9)
    # shallower than asked: not reported
    assert self_contacts(model, q, deeper_than=0.03).num_contacts == 0


def test_geometry_in_a_class_that_does_not_collide_is_collided_as_read(tmp_path):
    """A model whose every geom has ``contype`` and ``conaffinity`` 0 (Apollo's, for a
    simulator adding its own contacts) is read with them as its collision geometry, and
    MuJoCo's detection on the robot's model then finds the lower link swung into the
    base: the bodies' masks, which its broad phase reads first, set with the geoms'."""
    import warnings

    from retarget.core.errors import RetargetWarning
    from retarget.targets.robot.model import read_robot

    xml = _XML.replace('type="sphere"', 'type="sphere" contype="0" conaffinity="0" group="3"')
    path = tmp_path / "quiet.xml"
    path.write_text(xml)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RetargetWarning)
        robot = read_robot(path)
    assert any("no geometry collides" in str(w.message) for w in caught)
    model = robot.model
    t = np.arcsin((0.2**2 + 0.15**2 - 0.13**2) / (2 * 0.2 * 0.15))
    found = self_contacts(model, np.stack([_qpos(model, 0.0), _qpos(model, t)]), deeper_than=1e-3)
    assert found.num_contacts == 1 and found.frame[0] == 1
    np.testing.assert_allclose(found.dist[0], -0.02, atol=1e-9)
