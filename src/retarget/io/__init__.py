"""Reading and writing motion files: BVH, ASF/AMC and the library's own npz."""

from .bvh import format_bvh, parse_bvh, read_bvh, write_bvh

__all__ = ["format_bvh", "parse_bvh", "read_bvh", "write_bvh"]
