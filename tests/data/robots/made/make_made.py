"""Write the two humanoids made for the tests: sides marked only by a suffix, or only by position.

``python tests/data/robots/made/make_made.py`` (re)writes, beside this script:

* ``suffix_servo.xml`` (MJCF): a 0.56 m robot in the manner of a hobby servo build,
  its floating base at the torso and the legs hanging from it; its links named by the
  servo parts they hold (``2xl430_gears_3``, ``spur_1m_24t_driven``), the right
  side's names the left's with a ``_2`` suffix: nothing says left or right, leg or
  arm, knee or ankle.
* ``positions.urdf`` (URDF): a 1.2 m robot floated at its trunk, the legs on a waist
  link below it, arms held out sideways at rest; every link ``b<k>``, every joint
  ``j<k>``, numbered in an order that mixes the sides (the right leg before the
  left, the arms after the head): only the shape tells what anything is.

Both are this project's own (no third-party part), public domain (CC0).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent


def _v(*xs: float) -> str:
    return " ".join(f"{x:g}" for x in xs)


# -- suffix_servo.xml -------------------------------------------------------------------------


def _chain(links: list[tuple[str, str, str, str, str]], depth: int = 3) -> str:
    """Bodies each the only child of the last, as MJCF: per body ``(name, pos, inertial
    attributes, joint attributes or "", geom attributes or "")``, indented from ``depth``."""
    name, pos, inertial, joint, geom = links[0]
    pad = "  " * depth
    lines = [f'{pad}<body name="{name}" pos="{pos}">', f"{pad}  <inertial {inertial}/>"]
    lines += [f"{pad}  <joint {joint}/>"] if joint else []
    lines += [f"{pad}  <geom {geom}/>"] if geom else []
    inner = _chain(links[1:], depth + 1) if len(links) > 1 else ""
    return "\n" + "\n".join(lines) + inner + f"\n{pad}</body>"


def _servo_leg(side: int, s: str) -> str:
    rod = 'type="capsule" fromto="0 0 -0.015 0 0 -0.085"'
    return _chain(
        [
            (
                f"2xl430_gears_3{s}",
                _v(0, 0.04 * side, -0.07),
                'pos="0 0 -0.01" mass="0.08" diaginertia="2e-5 2e-5 2e-5"',
                f'name="hip_yaw_drive{s}" axis="0 0 1" range="-0.8 0.8"',
                'type="box" size="0.018 0.018 0.012" pos="0 0 -0.01"',
            ),
            (
                f"hip_roll_link{s}",
                "0 0 -0.03",
                'pos="0 0 0" mass="0.06" diaginertia="1e-5 1e-5 1e-5"',
                f'name="hip_roll{s}" axis="1 0 0" range="{_v(*sorted((-0.4 * side, 0.8 * side)))}"',
                "",
            ),
            (
                f"spur_1m_24t_driven{s}",
                "0 0 -0.02",
                'pos="0 0 -0.05" mass="0.12" diaginertia="1e-4 1e-4 2e-5"',
                f'name="hip_pitch{s}" axis="0 1 0" range="-1.6 1.2"',
                f'{rod} size="0.018"',
            ),
            (
                f"2xc430{s}",
                "0 0 -0.1",
                'pos="0 0 -0.05" mass="0.1" diaginertia="8e-5 8e-5 1e-5"',
                f'name="knee_drive{s}" axis="0 1 0" range="0 2.3"',
                f'{rod} size="0.016"',
            ),
            (
                f"ank_pitch_link{s}",
                "0 0 -0.1",
                'pos="0 0 0" mass="0.03" diaginertia="5e-6 5e-6 5e-6"',
                f'name="ank_pitch{s}" axis="0 1 0" range="-1 1"',
                "",
            ),
            (
                f"foot_plate{s}",
                "0 0 -0.01",
                'pos="0.015 0 -0.01" mass="0.06" diaginertia="2e-5 4e-5 5e-5"',
                f'name="ank_roll{s}" axis="1 0 0" range="-0.5 0.5"',
                'type="box" size="0.045 0.025 0.005" pos="0.015 0 -0.02"',
            ),
        ]
    )


def _servo_arm(side: int, s: str) -> str:
    return _chain(
        [
            (
                f"sho_pitch_link{s}",
                _v(0, 0.075 * side, 0.05),
                'pos="0 0 0" mass="0.04" diaginertia="5e-6 5e-6 5e-6"',
                f'name="sho_pitch{s}" axis="0 1 0" range="-3 3"',
                "",
            ),
            (
                f"2xl430{s}",
                _v(0, 0.02 * side, 0),
                'pos="0 0 -0.04" mass="0.06" diaginertia="3e-5 3e-5 5e-6"',
                f'name="sho_roll{s}" axis="1 0 0" range="{_v(*sorted((-0.3 * side, 2.5 * side)))}"',
                'type="capsule" fromto="0 0 -0.012 0 0 -0.068" size="0.014"',
            ),
            (
                f"elbow_link{s}",
                "0 0 -0.08",
                'pos="0 0 -0.04" mass="0.05" diaginertia="3e-5 3e-5 5e-6"',
                f'name="elbow_drive{s}" axis="0 1 0" range="-2.3 0"',
                'type="capsule" fromto="0 0 -0.012 0 0 -0.06" size="0.013"',
            ),
            (
                f"hand{s}",
                "0 0 -0.075",
                'pos="0 0 -0.015" mass="0.02" diaginertia="2e-6 2e-6 2e-6"',
                "",
                'type="box" size="0.012 0.008 0.018" pos="0 0 -0.015"',
            ),
        ]
    )


def suffix_servo() -> str:
    left, right = "", "_2"
    limbs = _servo_arm(1, left) + _servo_arm(-1, right)
    limbs += _servo_leg(1, left) + _servo_leg(-1, right)
    return f"""<?xml version="1.0" encoding="utf-8"?>
<!-- Made for the tests by make_made.py (this project's own, CC0): sides only by a "_2"
     suffix, links named by their servo parts. -->
<mujoco model="suffix_servo">
  <compiler angle="radian" autolimits="true"/>
  <default>
    <joint damping="0.1"/>
    <geom contype="1" conaffinity="1" rgba="0.6 0.6 0.7 1"/>
  </default>
  <worldbody>
    <body name="torso" pos="0 0 0.36">
      <freejoint name="floating_base"/>
      <inertial pos="0 0 0.02" mass="0.9" diaginertia="3e-3 2.5e-3 1.5e-3"/>
      <geom type="box" size="0.04 0.06 0.07" pos="0 0 0.03"/>
      <body name="2xc430_neck" pos="0 0 0.1">
        <inertial pos="0 0 0.01" mass="0.03" diaginertia="4e-6 4e-6 4e-6"/>
        <joint name="neck_drive" axis="0 0 1" range="-1.5 1.5"/>
        <body name="head_mount" pos="0 0 0.02">
          <inertial pos="0 0 0.04" mass="0.12" diaginertia="8e-5 8e-5 8e-5"/>
          <joint name="neck_drive_pitch" axis="0 1 0" range="-0.6 0.9"/>
          <geom type="sphere" size="0.045" pos="0 0 0.045"/>
        </body>
      </body>{limbs}
    </body>
  </worldbody>
</mujoco>
"""


# -- positions.urdf ----------------------------------------------------------------------------


class _Urdf:
    """Links ``b<k>`` and joints ``j<k>`` numbered as they are added."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.links = 0
        self.joints = 0

    def link(self, mass: float, geoms: list[str]) -> str:
        name = f"b{self.links}"
        self.links += 1
        inertia = 0.4 * mass * 0.03**2
        body = "".join(
            f'\n    <collision><origin xyz="{xyz}" rpy="{rpy}"/>'
            f"<geometry>{g}</geometry></collision>"
            for xyz, rpy, g in geoms
        )
        self.parts.append(
            f'  <link name="{name}">\n    <inertial><mass value="{mass:g}"/>'
            f'<inertia ixx="{inertia:g}" iyy="{inertia:g}" izz="{inertia:g}" ixy="0" ixz="0" '
            f'iyz="0"/></inertial>{body}\n  </link>'
        )
        return name

    def joint(self, parent: str, child: str, xyz: tuple, axis: tuple, lo: float, hi: float) -> None:
        name = f"j{self.joints}"
        self.joints += 1
        self.parts.append(
            f'  <joint name="{name}" type="revolute">'
            f'<parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{_v(*xyz)}" rpy="0 0 0"/><axis xyz="{_v(*axis)}"/>'
            f'<limit lower="{lo:g}" upper="{hi:g}" effort="50" velocity="10"/></joint>'
        )


def _rod(length: float, radius: float, along: str = "z") -> tuple:
    """A cylinder from the link's origin ``length`` along -z (or +/-y)."""
    if along == "z":
        return (_v(0, 0, -length / 2), "0 0 0", f'<cylinder radius="{radius}" length="{length}"/>')
    sign = 1 if along == "+y" else -1
    return (
        _v(0, sign * length / 2, 0),
        "1.5708 0 0",
        f'<cylinder radius="{radius}" length="{length}"/>',
    )


def positions() -> str:
    u = _Urdf()
    trunk = u.link(8.0, [("0 0 0.12", "0 0 0", '<box size="0.16 0.26 0.3"/>')])
    waist = u.link(2.5, [("0 0 -0.02", "0 0 0", '<box size="0.12 0.2 0.06"/>')])
    u.joint(trunk, waist, (0.0, 0.0, -0.12), (0, 0, 1), -1.5, 1.5)
    for side in (-1, 1):  # the right leg first
        a = u.link(1.0, [])
        u.joint(waist, a, (0.0, 0.1 * side, -0.06), (0, 1, 0), -1.8, 1.5)
        b = u.link(0.4, [])
        u.joint(a, b, (0.0, 0.0, -0.02), (1, 0, 0), *sorted((-0.2 * side, 1.5 * side)))
        c = u.link(2.2, [_rod(0.2, 0.045)])
        u.joint(b, c, (0.0, 0.0, -0.07), (0, 0, 1), -1.0, 1.0)
        d = u.link(1.7, [_rod(0.26, 0.04)])
        u.joint(c, d, (-0.01, 0.0, -0.23), (0, 1, 0), 0.0, 2.3)
        e = u.link(0.1, [])
        u.joint(d, e, (0.0, 0.0, -0.28), (0, 1, 0), -0.85, 0.35)
        f = u.link(0.7, [("0.035 0 -0.03", "0 0 0", '<box size="0.22 0.09 0.025"/>')])
        u.joint(e, f, (0.0, 0.0, -0.012), (1, 0, 0), -0.45, 0.45)
    h1 = u.link(0.4, [])
    u.joint(trunk, h1, (0.0, 0.0, 0.28), (0, 0, 1), -1.5, 1.5)
    h2 = u.link(0.6, [("0.01 0 0.1", "0 0 0", '<sphere radius="0.09"/>')])
    u.joint(h1, h2, (0.0, 0.0, 0.05), (0, 1, 0), -0.35, 1.2)
    for side in (1, -1):  # arms held out sideways (a T-pose), the left first
        way = "+y" if side > 0 else "-y"
        a = u.link(0.5, [])
        u.joint(trunk, a, (0.0, 0.12 * side, 0.23), (0, 1, 0), -3.3, 1.2)
        b = u.link(0.2, [])
        u.joint(a, b, (0.0, 0.05 * side, 0.0), (1, 0, 0), *sorted((-1.7 * side, 1.6 * side)))
        c = u.link(1.0, [_rod(0.14, 0.035, way)])
        u.joint(b, c, (0.0, 0.06 * side, 0.0), (0, 1, 0), -2.3, 2.3)
        d = u.link(0.5, [_rod(0.22, 0.03, way)])
        u.joint(c, d, (0.0, 0.15 * side, 0.0), (0, 0, 1), *sorted((0.0, -2.4 * side)))
    body = "\n".join(u.parts)
    return f"""<?xml version="1.0" encoding="utf-8"?>
<!-- Made for the tests by make_made.py (this project's own, CC0): every link b<k>, every
     joint j<k>; sides, limbs and head only by position. -->
<robot name="positions">
{body}
</robot>
"""


if __name__ == "__main__":
    (HERE / "suffix_servo.xml").write_text(suffix_servo())
    (HERE / "positions.urdf").write_text(positions())
