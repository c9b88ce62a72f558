"""Atomic output that never overwrites an input."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import RetargetError
from ..core.strict_json import dumps_json

__all__ = ["atomic_write", "check_not_input", "write_json"]


def check_not_input(path: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> None:
    """Raise if ``path`` names the same file as one of ``inputs``."""
    out = Path(path)
    for src in inputs:
        src = Path(src)
        same = out.resolve() == src.resolve()
        if not same and out.exists() and src.exists():
            same = os.path.samefile(out, src)
        if same:
            raise RetargetError(f"{out}: refusing to write over the input file {src}")


def atomic_write(
    path: str | os.PathLike, data: str | bytes, inputs: Iterable[str | os.PathLike] = ()
) -> Path:
    """Write ``data`` to ``path`` all at once: a temporary file in the same
    folder, flushed, then renamed over the target, so readers never see half a
    file. Refuses to write over any of ``inputs``.
    """
    path = Path(path)
    check_not_input(path, inputs)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise RetargetError(f"{path}: the folder {folder} does not exist")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    import tempfile  # (here: reading never needs it)

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def write_json(
    path: str | os.PathLike, data: Any, inputs: Iterable[str | os.PathLike] = ()
) -> Path:
    """``data`` as strict, indented JSON text (:func:`retarget.core.strict_json.dumps_json`),
    written atomically, never over ``inputs``."""
    return atomic_write(path, dumps_json(data), inputs=inputs)
