"""The contract of a kind of target, and what passes between a target and the pipeline.

A target is anything with a kinematic tree that a motion can be carried onto
(DESIGN.md, "Kinds of target"): a skeleton file or a preset, a rigged character, a
robot. Each kind is one type (:mod:`retarget.targets.skeleton`,
:mod:`retarget.targets.character`, :mod:`retarget.targets.robot`) that keeps the
:class:`Target` protocol:

1. **open**: its files are read, its models compiled, once (the registry's opener,
   :func:`retarget.targets.open_target`); the target holds them;
2. **prepare** (:meth:`Target.prepare`): for a source, the one skeleton model the
   methods run on, and what the kind asks of them (:class:`Prepared`: method
   options' defaults, values it knows of itself such as a robot's mass model, feet
   to be levelled);
3. **finish** (:meth:`Target.finish`): the method's result, on the whole prepared
   skeleton, into the target's own result (a motion on its skeleton in its axes; a
   character's with its hands kept out of its body; a robot's joint trajectories);
4. **measure** (:meth:`Target.measure`): its own measures of that result;
5. **write** (:meth:`Target.write`): into the files its users load.

The pipeline (:func:`retarget.pipeline.retarget`) maps the source onto the prepared
skeleton by roles (:func:`retarget.humanoid.mapping.map_for_method`), runs the method
and calls these in order: every method runs on every kind unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..core.motion import Motion
from ..core.result import Result
from ..core.skeleton import Skeleton

if TYPE_CHECKING:
    from ..humanoid.mapping import ForMethod

__all__ = ["Carried", "Finished", "Prepared", "Target"]


def _nothing(skeleton: Skeleton) -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True, eq=False)
class Prepared:
    """What a target gives the methods for one source (:meth:`Target.prepare`).

    Attributes
    ----------
    skeleton : Skeleton
        The body the methods run on, before the role mapping (its own unit and axes).
    check_roles : str, optional
        The file the pipeline names when the skeleton's humanoid roles are not found
        (a file the user gave, its roles perhaps named by a map file); None: not
        checked (a preset is made from the source's roles; a robot's are its own
        hinges', which the mapping checks).
    level_feet : bool
        Align the feet level rather than along their bones
        (:func:`retarget.humanoid.mapping.map_skeletons`): a robot's sole plate.
    defaults : mapping of str to object
        Method options (by name, as given) where the user gave none, when the method
        declares them (a robot: ``limits="strict"``, ``plant_heights="rest"``).
    supplies : callable
        ``supplies(skeleton)``, ``skeleton`` the one the method runs on (after the
        mapping): method arguments the target knows of itself (a robot's mass model,
        ``body``, and ``torque_limits``; a morph's per-frame offsets,
        ``translations``), taken by a method that declares them where the user gave
        none.
    requires : tuple of str
        Of those, the ones the target cannot do without (a morph's ``translations``):
        always given, and a method that does not declare one is refused.
    needs : str
        What asks for ``requires``, in the command line's words, for the refusal
        (``--target-from/--target-to``).
    whole_time : bool
        The report's time covers :meth:`Target.finish` too (a robot's IK pass onto its
        hinges is part of retargeting onto it).
    """

    skeleton: Skeleton
    check_roles: str | None = None
    level_feet: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)
    supplies: Callable[[Skeleton], Mapping[str, Any]] = _nothing
    requires: tuple[str, ...] = ()
    needs: str = ""
    whole_time: bool = False


@dataclass(frozen=True, eq=False)
class Carried:
    """What :meth:`Target.finish` gives back.

    Attributes
    ----------
    output : object
        The target's own result (a motion on its skeleton in its axes, a robot's joint
        trajectories).
    upright : Motion
        The result on the whole prepared skeleton, Y up, after the target's own pass (a
        character's hands kept out of its body): where its limbs point is compared with
        the source's.
    report : mapping
        What the kind did, for the report (strict JSON values).
    """

    output: Any
    upright: Motion
    report: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Finished:
    """One retargeting, for :meth:`Target.measure`.

    Attributes
    ----------
    source : Motion
        The source as given (its own unit and axes; the frames retargeted).
    ready : Motion
        The source made ready for the method (:attr:`ForMethod.motion`: Y up, mapped).
    result : Result
        The method's own: its motion on the skeleton it ran on (Y up), its goals.
    output : object
        The target's result (:meth:`Target.finish`).
    """

    source: Motion
    ready: Motion
    result: Result
    output: Any


@runtime_checkable
class Target(Protocol):
    """A kind of target (module docstring)."""

    @property
    def name(self) -> str:
        """How reports and manifests name it: its path, ``preset:NAME``, ``morph:A->B``."""
        ...

    @property
    def inputs(self) -> tuple[str, ...]:
        """The files it read: never written over, hashed by a batch."""
        ...

    @property
    def kind(self) -> str:
        """Its kind's name in the registry (``"robot"``, ...)."""
        ...

    @property
    def writes(self) -> tuple[str, ...]:
        """The suffixes :meth:`write` takes (a batch's ``--format``; the first its default)."""
        ...

    @property
    def from_source(self) -> bool:
        """Made from each source's own skeleton (a preset): the source's roles must be
        found as they are, a map file cannot name them."""
        ...

    def prepare(self, source: Motion) -> Prepared:
        """The skeleton the methods run on for ``source`` and what the kind asks."""
        ...

    def finish(self, motion: Motion, mapping: ForMethod) -> Carried:
        """``motion``, the method's result on the whole prepared skeleton, Y up
        (:meth:`ForMethod.unfold`), into the target's own result in its own axes
        (``mapping.finish`` turns a motion there), with what the kind did."""
        ...

    def measure(self, run: Finished) -> dict[str, Any]:
        """The kind's measures of the run (strict JSON values)."""
        ...

    def write(
        self,
        path: str | os.PathLike,
        output: Any,
        *,
        name: str,
        inputs: Sequence[str | os.PathLike] = (),
    ) -> Path:
        """``output`` written to ``path`` (its suffix one of :attr:`writes`), atomically,
        never over ``inputs``; ``name`` names the clip where the file holds several (a
        character's animation)."""
        ...

    def describe(self, measures: Mapping[str, Any]) -> str:
        """The measures in a few words, for the command line's one-line summary."""
        ...
