"""Reading and writing motion files: BVH, ASF/AMC and the library's own npz."""

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
