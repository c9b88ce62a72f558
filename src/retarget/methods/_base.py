"""A named retargeting method, the options it declares, and checks methods share."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import RetargetError

if TYPE_CHECKING:
    from ..core.result import Result
    from ..core.skeleton import Skeleton

__all__ = ["FOOT_HOLD", "TERRAIN", "Method", "Option", "check_same_hierarchy", "read_terrain"]


def _given(value: Any) -> bool:
    return value is not None


@dataclass(frozen=True)
class Option:
    """One option of a method, declared once (``OPTIONS`` at the end of its module).

    ``retarget run`` and ``retarget batch`` show it as ``flag``; a
    :class:`~retarget.pipeline.run.RunJob` carries it in ``method_options[name]``; the method
    receives it as its keyword argument ``name``.

    Parameters
    ----------
    name : str
        The method's keyword argument (``RunJob.method_options`` key, the keyword of
        :func:`retarget.retarget`).
    flag : str or None
        The command line's option string (``--scaled-goals``); None for an argument
        only the library gives (a morph's per-frame offsets, a robot's mass model: what
        a target supplies, :class:`retarget.targets.Prepared`).
    help : str
        One line for ``--help`` (the command line prefixes the methods that take it).
    type : callable, optional
        Parses the command line's text (``int``, ``float``); default: the text.
    default : object, optional
        The value when the flag is not given: ``None``, the method's own default.
    choices : tuple of str, optional
    metavar : str, optional
    const : object, optional
        For a flag without a value: the value it gives (``True`` for
        ``--scaled-goals``, ``False`` for ``--no-root-estimation``).
    many : bool
        The flag may be repeated; the value is the list of what it was given.
    convert : callable, optional
        From the given value to the method's argument (``--noise P,DEG`` to a pair, a
        ``--terrain`` file to a shape), applied when the job runs.
    file : bool
        The value is a path the job reads (listed in ``RunJob.inputs``).
    given : callable
        Whether a value counts as given (default: not ``None``).
    """

    name: str
    flag: str | None
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    const: Any = None
    many: bool = False
    convert: Callable[[Any], Any] | None = None
    file: bool = False
    given: Callable[[Any], bool] = _given

    @property
    def dest(self) -> str:
        """The attribute of parsed command-line arguments (argparse's from ``flag``)."""
        return (self.flag or self.name).lstrip("-").replace("-", "_")

    def value(self, given: Any) -> Any:
        """The method's argument for the ``given`` value."""
        return given if self.convert is None else self.convert(given)


@dataclass(frozen=True)
class Method:
    """A named retargeting method: its function and options live in ``module``
    (``"package.module:function"``), imported on first use."""

    name: str
    summary: str
    target: str

    def _module(self) -> Any:
        return importlib.import_module(self.target.partition(":")[0])

    @property
    def run(self) -> Callable[..., Result]:
        """The method: ``(source, target, **options) -> Result``."""
        return getattr(self._module(), self.target.partition(":")[2])  # type: ignore[no-any-return]

    @property
    def options(self) -> tuple[Option, ...]:
        """The options it declares (its module's ``OPTIONS``)."""
        return tuple(getattr(self._module(), "OPTIONS", ()))


def read_terrain(terrain: Any) -> Any:
    """The shape of a ``--terrain`` file (:func:`retarget.io.scene.read_environment`), or
    a shape given as it is (the library's callers)."""
    if not isinstance(terrain, (str, os.PathLike)):
        return terrain
    from ..io.scene import read_environment

    return read_environment(terrain)


#: ``--terrain FILE``: the option of every method that walks on a given ground.
TERRAIN = Option(
    "terrain",
    "--terrain",
    "ground to walk on (.json scene or .npz height field)",
    metavar="FILE",
    convert=read_terrain,
    file=True,
)

#: The target's pieces kept apart (a robot's links: :func:`retarget.targets.robot.apart.apart_on`),
#: a :class:`retarget.tasks.CollisionTask` on the skeleton the method runs on; only a
#: target supplies it (no flag). ``hierarchical`` takes it.
APART = Option(
    "apart",
    None,
    "the target's pieces kept apart inside the method (a robot's links)",
)

#: ``--no-foot-hold``: puppetry's goals are the performer's feet even where planted (the
#: paper's; stage 4b of :mod:`retarget.online.puppetry` off). ``retarget run --method
#: puppetry`` and ``retarget serve`` take it.
FOOT_HOLD = Option(
    "hold_feet",
    "--no-foot-hold",
    "goals are the performer's feet even where planted (the paper's)",
    const=False,
)

#: Capture glitches held (:mod:`retarget.filters.glitch`): omr and puppetry take it.
GLITCH_SPEED = Option(
    "glitch_speed",
    "--glitch-speed",
    "a source joint turning faster (degrees/s) is a capture glitch, held; 0: none",
    type=float,
    metavar="DEG_PER_S",
)


def check_same_hierarchy(source: Skeleton, target: Skeleton) -> None:
    """Methods that copy rotations joint by joint need the target to have the
    source's joints by name (mapping between other hierarchies: see roles)."""
    missing = [n for n in source.names if n not in set(target.names)]
    if missing:
        raise RetargetError(
            f"the target lacks the source joints {missing[:8]}{'…' if len(missing) > 8 else ''}; "
            "use a target with the source's joint names"
        )
