"""Reading and writing motion files: BVH, ASF/AMC and the library's own npz.

The names below load on first use (PEP 562), so reading a BVH file imports
neither the ASF/AMC reader nor ``zipfile``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .asf_amc import (
        AsfSkeleton,
        format_amc,
        parse_amc,
        parse_asf,
        read_amc,
        read_asf,
        read_asf_amc,
        write_amc,
    )
    from .bvh import format_bvh, parse_bvh, read_bvh, write_bvh
    from .formats import READABLE, WRITABLE, read_motion, write_motion
    from .npz import read_npz, write_npz

#: The names each module exports here (``__all__``, a test checks they agree).
_EXPORTS = {
    "asf_amc": "AsfSkeleton format_amc parse_amc parse_asf"
    " read_amc read_asf read_asf_amc write_amc",
    "bvh": "format_bvh parse_bvh read_bvh write_bvh",
    "formats": "READABLE WRITABLE read_motion write_motion",
    "npz": "read_npz write_npz",
}
#: The module of each exported name.
_HOME = {name: module for module, names in _EXPORTS.items() for name in names.split()}
__all__ = [
    "READABLE",
    "WRITABLE",
    "AsfSkeleton",
    "format_amc",
    "format_bvh",
    "parse_amc",
    "parse_asf",
    "parse_bvh",
    "read_amc",
    "read_asf",
    "read_asf_amc",
    "read_bvh",
    "read_motion",
    "read_npz",
    "write_amc",
    "write_bvh",
    "write_motion",
    "write_npz",
]
_SUBMODULES = ("asf_amc", "bvh", "formats", "npz", "sensors")


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first use (then kept here)."""
    if name in _SUBMODULES:  # (``retarget.io.bvh`` after ``import retarget.io``)
        return importlib.import_module(f"{__name__}.{name}")
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
