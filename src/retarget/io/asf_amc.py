"""ASF/AMC (Acclaim skeleton and motion) reading.

An ASF file describes a skeleton as *bones*: each has a ``direction`` and
``length`` (the segment in the rest pose), an ``axis`` (the orientation of the
frame its rotations are measured in) and ``dof`` (which of ``rx ry rz`` it turns
about), with ``limits``. An AMC file lists, per frame, the root's translation
and rotation and each bone's dof values.

Mapping onto :class:`retarget.core.skeleton.Skeleton` (conventions in DESIGN.md,
"Conventions"):

* **joints** are ``"root"`` followed by every bone, parents before children
  (depth first over ``:hierarchy``, children in the order listed). Joint ``b``
  sits where bone ``b`` *starts*, i.e. at the end of its parent bone, so its
  offset is ``length(parent) · direction(parent)``; children of the root are
  offset by the root ``position`` (zero in practice). The root joint's own
  rest position is the origin: the AMC root translation replaces it.
* every **leaf bone** ends in an End Site ``f"{bone}_end"`` at
  ``length · direction``, so bone ``b``'s tip is the position of its children
  joints or of its end site.
* **rotations**: bone ``b``'s local rotation is ``C ⊗ M ⊗ C⁻¹``, ``C`` the
  rotation of its ASF ``axis`` (stored as :attr:`Skeleton.axes`), ``M`` that of
  its AMC dof values. Both are Euler rotations about fixed axes *applied in the
  listed order*: ``axis 0 0 20 XYZ`` and ``dof rx ry rz`` mean ``R = Rz Ry Rx``
  (rotate about x first), so their channels, listed in composition order as in
  BVH, are ``("Zrotation", "Yrotation", "Xrotation")``; ``dof rx rz`` gives
  ``R = Rz Rx`` and channels ``("Zrotation", "Xrotation")``. The three numbers
  of an ``axis`` (and of the root ``orientation``) are the angles about x, y
  and z; the order token only says in which order they apply. The root's
  ``order`` line works the same way for its rotation (``RX RY RZ`` → ``Rz Ry
  Rx``) and its ``orientation`` + ``axis`` give its ``C``. This is what
  pyacclaim 0.0.1 computes for the CMU/VICON files (``dof rx ry rz``, axis
  order ``XYZ``); pyacclaim ignores other orders, which we honour as listed.
* **units**: lengths and root translations are divided by ``:units length``
  (CMU/VICON write ``length 0.45``: ASF lengths divided by it are inches), so
  the skeleton's unit is ``"in"`` unless told otherwise (``unit=``). Angles are
  radians in memory; ``:units angle deg|rad`` says what the ASF holds, and an
  AMC ``:DEGREES`` / ``:RADIANS`` header (else the ASF's unit) what the AMC
  holds.
* **limits** become :attr:`Skeleton.limits` (radians, per x, y, z of the
  channel frame, ``±inf`` where absent).

AMC files do not store a frame rate; :func:`read_amc` takes ``fps`` (120 by
default, the CMU capture rate). Every malformed input raises
:class:`retarget.core.errors.FormatError` with the file, the 1-based line and what
was expected.

References
----------
M. Schafer, *Acclaim Skeleton File Definition V1.10*, Acclaim, 1994/1995.
"Acclaim Format - ASF line Details", CMU graphics lab
(http://graphics.cs.cmu.edu/nsp/course/cs229/info/ACCLAIMdef.html): the root
``order`` gives "the sequence in which root rotations are calculated about
fixed, global axes".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..core import quat
from ..core.dofs import channel_angles, project_to_dofs
from ..core.errors import FormatError, RetargetError
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from ._scan import _kernels, euler_deg_to_quat, parse_floats
from .files import atomic_write

__all__ = [
    "AsfSkeleton",
    "format_amc",
    "parse_amc",
    "parse_asf",
    "read_amc",
    "read_asf",
    "read_asf_amc",
    "write_amc",
]

_XYZ = "XYZ"
_ROOT_TOKENS = ("TX", "TY", "TZ", "RX", "RY", "RZ")
_BONE_KEYS = ("id", "name", "direction", "length", "axis", "dof", "limits", "bodymass", "cofmass")
_DEG_WORDS = {
    "deg": "deg",
    "degree": "deg",
    "degrees": "deg",
    "rad": "rad",
    "radian": "rad",
    "radians": "rad",
}
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INF = re.compile(r"[+-]?inf(?:inity)?", re.IGNORECASE)


@dataclass(frozen=True, eq=False, repr=False)
class AsfSkeleton(Skeleton):
    """A :class:`Skeleton` read from an ASF file, with what its AMC files need.

    Parameters
    ----------
    length_scale : float
        The ASF ``:units length``: AMC root translations are divided by it
        (the skeleton's offsets already are).
    root_order : tuple of str
        The root's ``order`` tokens (``"TX"`` … ``"RZ"``), the layout of its
        AMC values; its rotation tokens, reversed, are the root's rotation
        channels.
    angle_unit : str
        ``"deg"`` or ``"rad"``: the unit of AMC angles when the AMC header
        does not say.

    The other parameters are those of :class:`Skeleton`.
    """

    length_scale: float = 1.0
    root_order: tuple[str, ...] = _ROOT_TOKENS
    angle_unit: str = "deg"

    def __post_init__(self) -> None:
        super().__post_init__()
        scale = float(self.length_scale)
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"Expected a finite length_scale > 0, got {self.length_scale}")
        order = tuple(str(t).upper() for t in self.root_order)
        if any(t not in _ROOT_TOKENS for t in order) or len(set(order)) != len(order):
            raise ValueError(
                f"Expected distinct root order tokens from {_ROOT_TOKENS}, got {order}"
            )
        rot = "".join(t[1] for t in reversed(order) if t[0] == "R")
        if rot != self.euler_orders[0]:
            raise ValueError(
                f"root_order {order} disagrees with the root's rotation channels {self.channels[0]}"
            )
        angle = _DEG_WORDS.get(str(self.angle_unit).lower())
        if angle is None:
            raise ValueError(f"Expected angle_unit 'deg' or 'rad', got {self.angle_unit!r}")
        object.__setattr__(self, "length_scale", scale)
        object.__setattr__(self, "root_order", order)
        object.__setattr__(self, "angle_unit", angle)


# -- shared helpers -----------------------------------------------------------------------


def _read_bytes(path: str | os.PathLike) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise FormatError(str(path), None, f"cannot read the file ({exc.strerror})") from None


def _shown(token: str | bytes, limit: int = 40) -> str:
    if isinstance(token, bytes):
        token = token.decode("latin-1")
    return repr(token if len(token) <= limit else token[:limit] + "…")


def _axis_quat(angles_xyz: NDArray[np.float64], order: str) -> NDArray[np.float64]:
    """Rotation of angles about x, y, z (radians) applied in ``order`` (``"XYZ"``: x first)."""
    rev = order[::-1]
    return quat.quat_from_euler([angles_xyz[_XYZ.index(a)] for a in rev], rev)


# -- ASF ----------------------------------------------------------------------------------


class _Asf:
    """Line-based parser of ASF text; one method per section."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        self.n_lines = max(len(lines), 1)
        self.toks: list[list[str]] = []
        for raw in lines:
            k = raw.find("#")
            if k >= 0:
                raw = raw[:k]
            # the spec: commas and parentheses are whitespace
            self.toks.append(raw.replace(",", " ").replace("(", " ").replace(")", " ").split())
        self.length_scale = 1.0
        self.angle_unit = "deg"

    def error(self, line: int | None, message: str) -> FormatError:
        return FormatError(self.name, line, message)

    # numbers
    def number(self, tok: str, line: int, what: str, *, allow_inf: bool = False) -> float:
        if _NUMBER.fullmatch(tok):
            value = float(tok)
            if np.isfinite(value):
                return value
            raise self.error(line, f"{what}: {_shown(tok)} overflows a float")
        if allow_inf and _INF.fullmatch(tok):
            return float(tok)
        kind = "a number or ±inf" if allow_inf else "a finite number"
        raise self.error(line, f"expected {what} ({kind}), found {_shown(tok)}")

    def numbers(self, toks: list[str], count: int, line: int, what: str) -> list[float]:
        if len(toks) != count:
            raise self.error(line, f"expected {count} values for {what}, found {len(toks)}")
        return [self.number(t, line, what) for t in toks]

    def angle(self, value: float) -> float:
        return float(np.deg2rad(value)) if self.angle_unit == "deg" else value

    def axis_order(self, tok: str, line: int, what: str) -> str:
        order = tok.upper()
        if len(order) != 3 or set(order) != set(_XYZ):
            raise self.error(
                line, f"expected {what} order as a permutation of XYZ, found {_shown(tok)}"
            )
        return order

    # sections
    def sections(self) -> dict[str, tuple[int, int, list[tuple[int, list[str]]]]]:
        """Known sections: keyword -> (line, end line, content lines as (line, tokens))."""
        out: dict[str, tuple[int, int, list[tuple[int, list[str]]]]] = {}
        current: list | None = None
        for i, tk in enumerate(self.toks, 1):
            if not tk:
                continue
            if tk[0].startswith(":"):
                if current is not None:
                    current[1] = i
                key = tk[0][1:].lower()
                if key in out:
                    raise self.error(
                        i, f"a second :{key} section (the first is on line {out[key][0]})"
                    )
                current = [i, self.n_lines + 1, [(i, tk[1:])] if len(tk) > 1 else []]
                out[key] = current  # type: ignore[assignment]
            elif current is None:
                raise self.error(
                    i, f"expected a ':keyword' line (such as ':version'), found {_shown(tk[0])}"
                )
            else:
                current[2].append((i, tk))
        for key in ("root", "bonedata", "hierarchy"):
            if key not in out:
                raise self.error(
                    self.n_lines,
                    f"no :{key} section; an ASF file needs :root, :bonedata and :hierarchy",
                )
        return {k: tuple(v) for k, v in out.items()}  # type: ignore[misc]

    def units(self, content: list[tuple[int, list[str]]]) -> None:
        seen: dict[str, int] = {}
        for line, tk in content:
            key = tk[0].lower()
            if key not in ("mass", "length", "angle"):
                raise self.error(
                    line, f"expected a unit 'mass', 'length' or 'angle', found {_shown(tk[0])}"
                )
            if key in seen:
                raise self.error(line, f"unit {key!r} given twice (first on line {seen[key]})")
            seen[key] = line
            if len(tk) != 2:
                raise self.error(line, f"expected '{key} <value>', found {len(tk) - 1} values")
            if key == "angle":
                unit = _DEG_WORDS.get(tk[1].lower())
                if unit is None:
                    raise self.error(
                        line, f"expected 'angle deg' or 'angle rad', found {_shown(tk[1])}"
                    )
                self.angle_unit = unit
            else:
                value = self.number(tk[1], line, f"the {key} unit")
                if key == "length":
                    if value <= 0:
                        raise self.error(line, f"expected a length unit > 0, found {tk[1]}")
                    self.length_scale = value

    def root(self, start: int, content: list[tuple[int, list[str]]]) -> dict:
        root: dict = {"axis": "XYZ", "position": [0.0] * 3, "orientation": [0.0] * 3}
        seen: dict[str, int] = {}
        for line, tk in content:
            key, vals = tk[0].lower(), tk[1:]
            if key not in ("order", "axis", "position", "orientation"):
                raise self.error(
                    line,
                    "expected 'order', 'axis', 'position' or 'orientation' in "
                    f":root, found {_shown(tk[0])}",
                )
            if key in seen:
                raise self.error(
                    line, f"':root' has a second {key!r} line (first on line {seen[key]})"
                )
            seen[key] = line
            if key == "order":
                order = tuple(v.upper() for v in vals)
                for v in order:
                    if v not in _ROOT_TOKENS:
                        raise self.error(
                            line,
                            f"expected root order tokens from {' '.join(_ROOT_TOKENS)}, "
                            f"found {_shown(v)}",
                        )
                if len(set(order)) != len(order):
                    raise self.error(line, f"root order repeats a token: {' '.join(order)}")
                root["order"] = order
            elif key == "axis":
                if len(vals) != 1:
                    raise self.error(
                        line, f"expected 'axis' and one order token such as XYZ, found {len(vals)}"
                    )
                root["axis"] = self.axis_order(vals[0], line, "the root axis")
            else:
                root[key] = self.numbers(vals, 3, line, f"the root {key}")
        root["lines"] = seen
        if "order" not in root:
            raise self.error(
                start, "':root' has no 'order' line (such as 'order TX TY TZ RX RY RZ')"
            )
        return root

    def bonedata(self, end: int, content: list[tuple[int, list[str]]]) -> list[dict]:
        bones: list[dict] = []
        names: dict[str, int] = {}
        fields: dict | None = None
        current = None
        for line, tk in content:
            word = tk[0].lower()
            if fields is None:
                if word != "begin" or len(tk) != 1:
                    raise self.error(
                        line, f"expected 'begin' to open a bone, found {_shown(' '.join(tk))}"
                    )
                fields, current = {"begin": line}, None
                continue
            if word == "end" and len(tk) == 1:
                bone = self.bone(fields, line)
                if bone["name"] in names:
                    raise self.error(
                        fields["name"][0],
                        f"duplicate bone name {bone['name']!r} "
                        f"(first on line {names[bone['name']]})",
                    )
                names[bone["name"]] = fields["name"][0]
                bones.append(bone)
                fields = None
            elif word == "begin":
                raise self.error(
                    line,
                    f"'begin' inside the bone opened on line {fields['begin']}; "
                    "expected 'end' first",
                )
            elif word in _BONE_KEYS:
                if word in fields:
                    raise self.error(
                        line, f"bone has a second {word!r} line (first on line {fields[word][0]})"
                    )
                fields[word] = (line, tk[1:])
                current = word
            elif current == "limits":  # continuation lines of limits
                fields["limits"][1].extend(tk)
            else:
                raise self.error(
                    line,
                    f"expected a bone keyword ({', '.join(_BONE_KEYS)}) or 'end', "
                    f"found {_shown(tk[0])}",
                )
        if fields is not None:
            where = "the end of the file" if end > self.n_lines else f"line {end}"
            raise self.error(
                min(end, self.n_lines),
                f"the bone opened on line {fields['begin']} has no 'end' before {where}",
            )
        return bones

    def bone(self, fields: dict, end_line: int) -> dict:
        begin = fields["begin"]
        for key in ("name", "direction", "length", "axis"):
            if key not in fields:
                raise self.error(
                    begin, f"the bone opened here (ending on line {end_line}) has no {key!r}"
                )
        line, vals = fields["name"]
        if len(vals) != 1:
            raise self.error(line, f"expected one bone name after 'name', found {len(vals)} tokens")
        name = vals[0]
        if name.lower() == "root":
            raise self.error(line, "'root' is reserved for the root; a bone cannot be named so")
        if "id" in fields:
            line, vals = fields["id"]
            if len(vals) != 1 or not re.fullmatch(r"[+-]?[0-9]+", vals[0]):
                raise self.error(
                    line, f"expected one whole number after 'id', found {_shown(' '.join(vals))}"
                )
        line, vals = fields["direction"]
        direction = self.numbers(vals, 3, line, "the bone direction")
        line, vals = fields["length"]
        (length,) = self.numbers(vals, 1, line, "the bone length")
        if length < 0:
            raise self.error(line, f"expected a bone length >= 0, found {vals[0]}")
        segment = np.array(direction) * (length / self.length_scale)
        if not np.all(np.isfinite(segment)):
            raise self.error(line, "the bone length times its direction overflows a float")
        line, vals = fields["axis"]
        if len(vals) != 4:
            raise self.error(line, f"expected 'axis <x> <y> <z> <order>', found {len(vals)} values")
        angles = self.numbers(vals[:3], 3, line, "the bone axis angles")
        order = self.axis_order(vals[3], line, "the bone axis")
        axis = _axis_quat(np.array([self.angle(a) for a in angles]), order)
        dof: list[str] = []
        if "dof" in fields:
            line, vals = fields["dof"]
            if not vals:
                raise self.error(line, "expected dof tokens (rx ry rz) after 'dof'")
            for v in vals:
                d = v.lower()
                if d in ("tx", "ty", "tz", "l"):
                    raise self.error(
                        line,
                        f"dof {v!r}: bones that translate or stretch are not "
                        "supported; expected rx, ry, rz",
                    )
                if d not in ("rx", "ry", "rz"):
                    raise self.error(line, f"expected dof tokens rx, ry, rz, found {_shown(v)}")
                if d in dof:
                    raise self.error(line, f"dof {d!r} listed twice")
                dof.append(d)
        limits = np.tile([-np.inf, np.inf], (3, 1))
        if "limits" in fields:
            line, vals = fields["limits"]
            if not dof:
                raise self.error(line, "'limits' without a 'dof' line")
            if len(vals) != 2 * len(dof):
                raise self.error(
                    line,
                    f"expected {len(dof)} limit pairs (lower upper) for dof "
                    f"{' '.join(dof)}, found {len(vals)} values",
                )
            for k, d in enumerate(dof):
                lo = self.number(vals[2 * k], line, f"the lower limit of {d}", allow_inf=True)
                hi = self.number(vals[2 * k + 1], line, f"the upper limit of {d}", allow_inf=True)
                if lo > hi:
                    raise self.error(
                        line, f"limits of {d}: lower {vals[2 * k]} > upper {vals[2 * k + 1]}"
                    )
                limits[_XYZ.index(d[1].upper())] = [self.angle(lo), self.angle(hi)]
        return {
            "name": name,
            "line": fields["name"][0],
            "segment": segment,
            "axis": axis,
            "dof": dof,
            "limits": limits,
        }

    def hierarchy(self, end: int, content: list[tuple[int, list[str]]], bones: list[dict]) -> dict:
        known = {b["name"] for b in bones} | {"root"}
        children: dict[str, list[str]] = {n: [] for n in known}
        parent_line: dict[str, int] = {}
        state = "before"
        for line, tk in content:
            word = tk[0].lower()
            if state == "before":
                if word != "begin" or len(tk) != 1:
                    raise self.error(
                        line,
                        f"expected 'begin' to open the hierarchy, found {_shown(' '.join(tk))}",
                    )
                state = "inside"
            elif state == "after":
                raise self.error(
                    line, f"expected nothing after the hierarchy's 'end', found {_shown(tk[0])}"
                )
            elif word == "end" and len(tk) == 1:
                state = "after"
            else:
                for n in tk:
                    if n not in known:
                        raise self.error(
                            line,
                            f"unknown bone {_shown(n)} in :hierarchy; the bones are "
                            f"root, {', '.join(b['name'] for b in bones)}",
                        )
                parent = tk[0]
                for child in tk[1:]:
                    if child == "root":
                        raise self.error(line, "'root' cannot be the child of a bone")
                    if child == parent:
                        raise self.error(line, f"bone {child!r} is listed as its own child")
                    if child in parent_line:
                        raise self.error(
                            line, f"bone {child!r} already has a parent (line {parent_line[child]})"
                        )
                    parent_line[child] = line
                    children[parent].append(child)
        if state != "after":
            what = "'begin'" if state == "before" else "'end'"
            where = "the end of the file" if end > self.n_lines else f"line {end}"
            raise self.error(
                min(end, self.n_lines), f"the :hierarchy section has no {what} before {where}"
            )
        return children

    def parse(self, unit: str) -> AsfSkeleton:
        sections = self.sections()
        if "units" in sections:
            self.units(sections["units"][2])
        start, _, content = sections["root"]
        root = self.root(start, content)
        _, end, content = sections["bonedata"]
        bones = self.bonedata(end, content)
        _, end, content = sections["hierarchy"]
        children = self.hierarchy(end, content, bones)
        return self.build(root, bones, children, unit)

    def build(self, root: dict, bones: list[dict], children: dict, unit: str) -> AsfSkeleton:
        by_name = {b["name"]: b for b in bones}
        order: list[str] = []
        parent_of: dict[str, str] = {}
        stack = ["root"]
        while stack:  # depth first, children in the order listed
            n = stack.pop()
            order.append(n)
            for c in reversed(children[n]):
                parent_of[c] = n
                stack.append(c)
        placed = set(order)
        for b in bones:
            if b["name"] not in placed:
                raise self.error(
                    b["line"],
                    f"bone {b['name']!r} is not attached to the skeleton: "
                    ":hierarchy never links it to 'root' through its parents",
                )
        index = {n: k for k, n in enumerate(order)}
        root_offset = np.array(root["position"]) / self.length_scale
        if not np.all(np.isfinite(root_offset)):
            raise self.error(
                root["lines"].get("position"),
                "the root position divided by the length unit overflows a float",
            )
        n_joints = len(order)
        offsets = np.zeros((n_joints, 3))
        axes = np.tile([1.0, 0.0, 0.0, 0.0], (n_joints, 1))
        limits = np.tile([-np.inf, np.inf], (n_joints, 3, 1))
        rot_tokens = [t for t in root["order"] if t[0] == "R"]
        channels: list[tuple[str, ...]] = [
            (
                "Xposition",
                "Yposition",
                "Zposition",
                *(f"{t[1]}rotation" for t in reversed(rot_tokens)),
            )
        ]
        orientation = np.array([self.angle(a) for a in root["orientation"]])
        axes[0] = _axis_quat(orientation, root["axis"])
        for k, n in enumerate(order[1:], 1):
            bone = by_name[n]
            p = parent_of[n]
            offsets[k] = root_offset if p == "root" else by_name[p]["segment"]
            axes[k] = bone["axis"]
            limits[k] = bone["limits"]
            channels.append(tuple(f"{d[1].upper()}rotation" for d in reversed(bone["dof"])))
        taken = set(order)
        site_names, site_parents, site_offsets = [], [], []
        for n in order[1:]:
            if not children[n]:
                base = site = f"{n}_end"
                k = 1
                while site in taken:
                    k += 1
                    site = f"{base}{k}"
                taken.add(site)
                site_names.append(site)
                site_parents.append(index[n])
                site_offsets.append(by_name[n]["segment"])
        return AsfSkeleton(
            names=tuple(order),
            parents=np.array([-1] + [index[parent_of[n]] for n in order[1:]], dtype=np.intp),
            offsets=offsets,
            channels=tuple(channels),
            site_names=tuple(site_names),
            site_parents=np.array(site_parents, dtype=np.intp),
            site_offsets=np.array(site_offsets, dtype=np.float64).reshape(-1, 3),
            unit=unit,
            axes=axes,
            limits=limits,
            length_scale=self.length_scale,
            root_order=root["order"],
            angle_unit=self.angle_unit,
        )


def parse_asf(data: bytes | str, *, name: str = "<string>", unit: str = "in") -> AsfSkeleton:
    """Parse ASF text (see :func:`read_asf`); ``name`` is used in error messages.

    Examples
    --------
    >>> sk = parse_asf('''
    ... :units
    ...   length 0.45
    ... :root
    ...   order TX TY TZ RX RY RZ
    ... :bonedata
    ...   begin
    ...     name shin
    ...     direction 0 -1 0
    ...     length 0.9
    ...     axis 0 0 0 XYZ
    ...     dof rx
    ...   end
    ... :hierarchy
    ...   begin
    ...     root shin
    ...   end
    ... ''')
    >>> sk.names, sk.channels[1], sk.site_names, sk.site_offsets.round(6).tolist()
    (('root', 'shin'), ('Xrotation',), ('shin_end',), [[0.0, -2.0, 0.0]])
    >>> m = parse_amc("1\\nroot 0 0.45 0 0 0 0\\nshin 90\\n", sk)
    >>> m.root_position.tolist(), m.rotations[0, 1].round(6).tolist()
    ([[0.0, 1.0, 0.0]], [0.707107, 0.707107, 0.0, 0.0])
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
    else:
        text = data.removeprefix("\ufeff")
    return _Asf(name, text).parse(unit)


def read_asf(path: str | os.PathLike, *, unit: str = "in") -> AsfSkeleton:
    """Read an ASF (Acclaim skeleton) file.

    Parameters
    ----------
    path : str or path-like
    unit : str
        Label of the length unit recorded on the skeleton. Offsets are the ASF
        lengths divided by ``:units length``; for CMU/VICON files (``length
        0.45``) that is inches, the default label.

    Returns
    -------
    AsfSkeleton
        Joints ``"root"`` and every bone (parents first), an End Site
        ``"<bone>_end"`` at the tip of every leaf bone; see the module
        docstring for the mapping.

    Raises
    ------
    FormatError
        When the file is malformed (file, 1-based line and what was expected).
    """
    return parse_asf(_read_bytes(path), name=str(path), unit=unit)


# -- AMC ----------------------------------------------------------------------------------

_LINE_BLANK, _LINE_FRAME, _LINE_BONE, _LINE_UNKNOWN = 0, 1, 2, 3
_BOM = b"\xef\xbb\xbf"


class _AmcLayout:
    """What each joint's AMC line holds: value tokens (``"TX"``, ``"RZ"`` …) in file order."""

    def __init__(self, skeleton: Skeleton) -> None:
        self.skeleton = skeleton
        if isinstance(skeleton, AsfSkeleton):
            self.scale, self.angle_unit = skeleton.length_scale, skeleton.angle_unit
            root = skeleton.root_order
        else:
            self.scale, self.angle_unit = 1.0, "deg"
            chans = skeleton.channels[0]
            root = tuple("T" + c[0] for c in chans if c.endswith("position")) + tuple(
                "R" + c[0] for c in reversed(chans) if c.endswith("rotation")
            )
        self.tokens: list[tuple[str, ...]] = [root]
        for j in range(1, skeleton.num_joints):
            if skeleton.has_position_channels[j]:
                raise ValueError(
                    f"joint {skeleton.names[j]!r} has position channels; "
                    "AMC bones carry rotations only"
                )
            self.tokens.append(tuple("R" + a for a in reversed(skeleton.euler_orders[j])))
        self.ndof = np.array([len(t) for t in self.tokens], dtype=np.intp)
        names = list(skeleton.names)
        if "root" not in names:
            names[0] = "root"  # AMC files call the root 'root'
        self.names = names
        encoded = [n.encode("utf-8") for n in names]
        width = max(len(e) for e in encoded)
        self.name_table = np.zeros((len(names), max(width, 1)), dtype=np.uint8)
        for k, e in enumerate(encoded):
            self.name_table[k, : len(e)] = np.frombuffer(e, dtype=np.uint8)
        self.name_len = np.array([len(e) for e in encoded], dtype=np.intp)
        lower: dict[str, int] = {}
        for k, n in enumerate(names):
            lower[n.lower()] = -1 if n.lower() in lower else k  # -1: ambiguous
        self.lower = lower

    def describe(self, j: int) -> str:
        toks = self.tokens[j]
        return " ".join(t.lower() for t in toks) if toks else "no dof"


def _header(data: bytes, name: str) -> tuple[int, int, str | None]:
    """Skip the ':' header lines (and blank/comment lines) at the top.

    Returns (byte offset of the body, its first line number, angle unit or None)."""
    pos, line = 0, 1
    unit: str | None = None
    unit_line = 0
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl
        raw = data[pos:end]
        k = raw.find(b"#")
        tk = (raw if k < 0 else raw[:k]).split()
        if tk and not tk[0].startswith(b":"):
            break
        if tk:
            key = tk[0][1:].upper()
            if key in (b"DEGREES", b"RADIANS"):
                new = "deg" if key == b"DEGREES" else "rad"
                if unit is not None and unit != new:
                    raise FormatError(
                        name,
                        line,
                        f"':{key.decode()}' contradicts the angle unit of line {unit_line}",
                    )
                unit, unit_line = new, line
        pos, line = end + 1, line + 1
    return min(pos, n), line, unit


def parse_amc(
    data: bytes | str, skeleton: Skeleton, *, name: str = "<string>", fps: float = 120.0
) -> Motion:
    """Parse AMC text for ``skeleton`` (see :func:`read_amc`); ``name`` is used in errors."""
    fps = float(fps)
    if not (np.isfinite(fps) and fps > 0):
        raise ValueError(f"Expected fps > 0, got {fps}")
    layout = _AmcLayout(skeleton)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if data.startswith(_BOM):  # blank it: byte offsets and lines stay put
        data = b" " * len(_BOM) + data[len(_BOM) :]
    start, first_line, header_unit = _header(data, name)
    angle_unit = header_unit or layout.angle_unit
    buf = (
        np.frombuffer(data, dtype=np.uint8, offset=start)
        if start < len(data)
        else np.zeros(0, np.uint8)
    )
    n_lines = int(np.count_nonzero(buf == 10)) + 1
    clean = buf.copy()
    kind = np.zeros(n_lines, dtype=np.int8)
    code = np.zeros(n_lines, dtype=np.int64)
    ntok = np.zeros(n_lines, dtype=np.intp)
    fstart = np.zeros(n_lines, dtype=np.intp)
    fend = np.zeros(n_lines, dtype=np.intp)
    names, lengths = layout.name_table, layout.name_len
    _kernels()._scan_amc_lines(buf, clean, names, lengths, kind, code, ntok, fstart, fend)
    return _AmcBody(
        name, skeleton, layout, buf, clean, first_line, kind, code, ntok, fstart, fend
    ).motion(fps, angle_unit)


class _AmcBody:
    """Checks of the per-line arrays of the scan, then the gather into a Motion."""

    def __init__(
        self, name, skeleton, layout, buf, clean, first_line, kind, code, ntok, fstart, fend
    ) -> None:
        self.name = name
        self.skeleton = skeleton
        self.layout = layout
        self.buf = buf
        self.clean = clean
        self.first_line = first_line
        self.kind, self.code, self.ntok = kind, code, ntok
        self.fstart, self.fend = fstart, fend
        self.errors: list[tuple[int, str]] = []  # (0-based line in the body, message)

    def token(self, line: int) -> bytes:
        return self.buf[self.fstart[line] : self.fend[line]].tobytes()

    def fail(self, line: int, message: str) -> None:
        self.errors.append((int(line), message))

    def raise_first(self) -> None:
        if self.errors:
            line, message = min(self.errors, key=lambda e: e[0])
            raise FormatError(self.name, self.first_line + line, message)

    def resolve_unknown(self) -> None:
        """Bone names in another case, else errors for the unknown first tokens."""
        for line in np.flatnonzero(self.kind == _LINE_UNKNOWN):
            tok = self.token(int(line))
            k = self.layout.lower.get(tok.decode("utf-8", "replace").lower(), -1)
            if k >= 0:
                self.kind[line], self.code[line] = _LINE_BONE, k
            else:
                self.fail(
                    int(line),
                    f"expected a frame number or a bone name, found {_shown(tok)}; the bones "
                    f"are {', '.join(self.layout.names)}",
                )
                return  # the earliest is enough

    def motion(self, fps: float, angle_unit: str) -> Motion:
        layout = self.layout
        self.resolve_unknown()
        content = np.flatnonzero(self.kind != _LINE_BLANK)  # body line of each content line
        if len(content) == 0:
            raise FormatError(
                self.name,
                max(self.first_line - 1 + len(self.kind) - 1, 1),
                "no frames: expected a frame number line, then one line per bone",
            )
        kind = self.kind[content]
        code = self.code[content]
        ntok = self.ntok[content]
        is_frame = kind == _LINE_FRAME
        is_bone = kind == _LINE_BONE
        frame_rows = np.flatnonzero(is_frame)
        if len(frame_rows) == 0 or frame_rows[0] > 0:
            row = 0
            self.fail(
                content[row],
                f"expected a frame number before the first bone line, found "
                f"{_shown(self.token(content[row]))}",
            )
        bad = np.flatnonzero(is_frame & (ntok != 1))
        if len(bad):
            self.fail(
                content[bad[0]],
                f"expected a frame number alone on its line, found {ntok[bad[0]]} tokens",
            )
        numbers = code[frame_rows]
        gaps = np.flatnonzero(np.diff(numbers) != 1)
        if len(gaps):
            g = gaps[0]
            self.fail(
                content[frame_rows[g + 1]],
                f"expected frame {numbers[g] + 1} after frame {numbers[g]}, found {numbers[g + 1]}",
            )
        bone_code = np.where(is_bone, code, 0)
        expected = layout.ndof[bone_code]
        bad = np.flatnonzero(is_bone & (ntok - 1 != expected))
        if len(bad):
            r = bad[0]
            j = int(code[r])
            self.fail(
                content[r],
                f"bone {layout.names[j]!r} has dof {layout.describe(j)}: expected "
                f"{expected[r]} values, found {ntok[r] - 1}",
            )
        # values: every token but the first of each content line, in file order
        n_values = np.maximum(ntok - 1, 0)
        vstart = np.cumsum(n_values) - n_values
        total = int(n_values.sum())
        values, count, err = parse_floats(self.clean, total)
        if err >= 0:
            line = int(np.count_nonzero(self.buf[:err] == 10))
            tok = self.buf[err : err + 64].tobytes().split(None, 1)[0]
            self.fail(line, f"expected a finite number, found {_shown(tok)}")
        elif count != total:  # cannot happen: the scan and the parser split tokens alike
            raise FormatError(self.name, None, f"internal: counted {total} values, parsed {count}")
        # one line per (frame, bone)
        n_frames, n_joints = len(frame_rows), self.skeleton.num_joints
        frame_of = np.cumsum(is_frame) - 1
        rows = np.flatnonzero(is_bone & (frame_of >= 0))
        key = frame_of[rows] * n_joints + code[rows]
        by_key = np.argsort(key, kind="stable")
        dup = np.flatnonzero(key[by_key][1:] == key[by_key][:-1])
        if len(dup):
            second = rows[by_key][1:][dup]
            r = int(second.min())
            f = frame_of[r]
            self.fail(
                content[r],
                f"bone {layout.names[int(code[r])]!r} appears twice in frame {numbers[f]}",
            )
        table = np.full(n_frames * n_joints, -1, dtype=np.intp)
        table[key] = rows
        table = table.reshape(n_frames, n_joints)
        need = layout.ndof > 0
        missing = (table < 0) & need
        if n_frames and missing.any():
            f = int(np.flatnonzero(missing.any(axis=1))[0])
            j = int(np.flatnonzero(missing[f])[0])
            last = (frame_rows[f + 1] - 1) if f + 1 < n_frames else len(content) - 1
            self.fail(
                content[last],
                f"frame {numbers[f]} (line {self.first_line + content[frame_rows[f]]}) "
                f"has no line for bone {layout.names[j]!r}, which has dof {layout.describe(j)}",
            )
        self.raise_first()
        return self.gather(values, vstart, table, numbers, content, fps, angle_unit)

    def gather(self, values, vstart, table, numbers, content, fps, angle_unit) -> Motion:
        layout = self.layout
        n_frames = table.shape[0]
        root_position = np.zeros((n_frames, 3))
        columns: list[list[int]] = []
        orders: list[str] = []
        angle_cols: list[NDArray[np.float64]] = []
        col_joint: list[int] = []
        for j, toks in enumerate(layout.tokens):
            columns.append([])
            orders.append("")
            if not toks:
                continue
            v = values[vstart[table[:, j]][:, None] + np.arange(len(toks))]  # (F, ndof)
            for k in reversed(range(len(toks))):  # rotation channels: composition order
                if toks[k][0] == "R":
                    columns[j].append(len(angle_cols))
                    orders[j] += toks[k][1]
                    angle_cols.append(v[:, k])
                    col_joint.append(j)
            for k, t in enumerate(toks):
                if t[0] == "T":
                    root_position[:, _XYZ.index(t[1])] = v[:, k] / layout.scale
        angles = np.stack(angle_cols, axis=1) if angle_cols else np.zeros((n_frames, 0))
        if angle_unit == "rad":
            angles = np.rad2deg(angles)
        for arr, what in ((angles, "an angle"), (root_position, "a root translation")):
            bad = ~np.isfinite(arr)
            if bad.any():
                f, c = (int(x[0]) for x in np.nonzero(bad))
                j = col_joint[c] if arr is angles else 0
                line = self.first_line + content[table[f, j]]
                raise FormatError(
                    self.name,
                    line,
                    f"{what} of frame {numbers[f]} overflows a float once converted",
                )
        # sin/cos of θ/2 repeat every 720°, and fmod is exact: keeps huge angles finite & unit
        angles = np.fmod(angles, 720.0)
        rotations = euler_deg_to_quat(angles, columns, orders)
        axes = self.skeleton.axes
        turned = np.flatnonzero(np.any(axes != np.array([1.0, 0.0, 0.0, 0.0]), axis=1))
        if len(turned):
            c = axes[turned]
            rotations[:, turned] = quat.multiply(
                quat.multiply(c, rotations[:, turned]), quat.conjugate(c)
            )
        norm2 = np.einsum("fji,fji->fj", rotations, rotations)
        if np.all(np.abs(norm2 - 1.0) < 1e-12):
            return Motion._adopt(self.skeleton, root_position, rotations, fps)
        # a safety net that should never catch: the public constructor renormalises
        return Motion(self.skeleton, root_position, rotations, fps)  # pragma: no cover


def read_amc(path: str | os.PathLike, skeleton: Skeleton, *, fps: float = 120.0) -> Motion:
    """Read an AMC (Acclaim motion) file for a skeleton from :func:`read_asf`.

    Parameters
    ----------
    path : str or path-like
    skeleton : Skeleton
        Normally an :class:`AsfSkeleton` (its ``length_scale``, ``root_order``
        and ``angle_unit`` say how to read the values). A plain skeleton is
        read with length unit 1, degrees, the root's values ordered as its
        position channels then its rotation channels reversed, and each other
        joint's as its rotation channels reversed.
    fps : float
        Frames per second: AMC files do not store it (CMU captures at 120).

    Returns
    -------
    Motion
        One frame per frame-number line. Rotations are the full local
        rotations ``C ⊗ M ⊗ C⁻¹`` (see the module docstring).

    Raises
    ------
    FormatError
        Unknown bone names, a wrong number of values on a bone line, values
        that are not finite numbers, frame numbers that do not count up by
        one, a bone with dof missing from (or repeated in) a frame, no frames.
    ValueError
        For a bad ``fps`` or a skeleton whose non-root joints translate.

    Notes
    -----
    Bones may come in any order within a frame, and bones without dof may be
    left out. The whole body is scanned by one numba pass (line kinds, bone
    names) and :func:`retarget.io._scan.parse_floats`, then gathered with
    numpy: vicon.amc (2751 frames, 2.4 MB) reads in about 22 ms once the
    numba kernels are loaded (the first call of a process also loads them
    from numba's cache, some 0.3 s).
    """
    return parse_amc(_read_bytes(path), skeleton, name=str(path), fps=fps)


def read_asf_amc(
    asf_path: str | os.PathLike,
    amc_path: str | os.PathLike,
    *,
    fps: float = 120.0,
    unit: str = "in",
) -> Motion:
    """Read an ASF skeleton and an AMC motion of it (see :func:`read_asf`, :func:`read_amc`)."""
    return read_amc(Path(amc_path), read_asf(asf_path, unit=unit), fps=fps)


def format_amc(motion: Motion, *, precision: int = 6) -> str:
    """AMC text of a motion on an ASF skeleton (:func:`read_asf`), fully specified, degrees.

    Each frame lists every bone with DOFs, its values in the ASF's ``dof``
    order: the root's ``order`` (translations times the ASF's length scale),
    the others' rotation angles. Read back by :func:`read_amc` to within the
    printed precision.

    Raises
    ------
    ValueError
        When the skeleton is not an :class:`AsfSkeleton`, or a joint turns
        about an axis it has no channel for (:func:`retarget.core.dofs.project_to_dofs`
        puts a motion on its channels).
    """
    skeleton = motion.skeleton
    if not isinstance(skeleton, AsfSkeleton):
        raise ValueError("AMC needs an ASF skeleton (read_asf); write .bvh or .npz instead")
    off = quat.angle(project_to_dofs(skeleton, motion.rotations), motion.rotations)
    if off.size and off.max() > 1e-6:
        f, j = (int(x[0]) for x in np.nonzero(off == off.max()))
        raise ValueError(
            f"joint {skeleton.names[j]!r} turns {np.degrees(off[f, j]):.3g} degrees off its "
            f"channels ({skeleton.euler_orders[j] or 'none'}) at frame {f}: AMC cannot hold it"
        )
    layout = _AmcLayout(skeleton)
    theta = np.degrees(channel_angles(skeleton, motion.rotations))  # (F, J, 3), composition order
    columns, labels = [], []
    for j, toks in enumerate(layout.tokens):
        if not toks:
            continue
        order = skeleton.euler_orders[j]
        for t in toks:
            if t[0] == "T":
                columns.append(motion.root_position[:, _XYZ.index(t[1])] * layout.scale)
            else:
                columns.append(theta[:, j, order.index(t[1])])
        labels.append((layout.names[j], len(toks)))
    values = np.stack(columns, axis=1) if columns else np.zeros((motion.num_frames, 0))
    lines = [":FULLY-SPECIFIED", ":DEGREES"]
    fmt = f"{{:.{precision}f}}"
    for f in range(motion.num_frames):
        lines.append(str(f + 1))
        k = 0
        row = [fmt.format(v) for v in values[f]]
        for name, n in labels:
            lines.append(" ".join([name, *row[k : k + n]]))
            k += n
    return "\n".join(lines) + "\n"


def write_amc(
    path: str | os.PathLike,
    motion: Motion,
    *,
    precision: int = 6,
    inputs: tuple[str | os.PathLike, ...] = (),
) -> Path:
    """Write a motion on an ASF skeleton as AMC (:func:`format_amc`), atomically,
    never over ``inputs``; the skeleton stays in its ASF file."""
    try:
        text = format_amc(motion, precision=precision)
    except ValueError as exc:
        raise RetargetError(f"{path}: {exc}") from None
    return atomic_write(path, text, inputs=inputs)
