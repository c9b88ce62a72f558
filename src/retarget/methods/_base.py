"""A named retargeting method, and checks methods share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import RetargetError
from ..result import Result
from ..skeleton import Skeleton

__all__ = ["Method", "check_same_hierarchy"]


@dataclass(frozen=True)
class Method:
    """A named retargeting method."""

    name: str
    summary: str
    run: Callable[..., Result]


def check_same_hierarchy(source: Skeleton, target: Skeleton) -> None:
    """Methods that copy rotations joint by joint need the target to have the
    source's joints by name (mapping between other hierarchies: see roles)."""
    missing = [n for n in source.names if n not in set(target.names)]
    if missing:
        raise RetargetError(
            f"the target lacks the source joints {missing[:8]}{'…' if len(missing) > 8 else ''}; "
            "use a target with the source's joint names"
        )
