"""FBX through Blender's own importer and exporter (issue 28): an FBX character or
clip is converted to GLB by Blender and read as glTF (:mod:`retarget.io.gltf`); a GLB
written for an FBX character is converted back to FBX by Blender.

Blender's ``bpy`` (5.0, which needs numpy < 2) lives in its own environment, started
as a subprocess (``_blender_script.py``): the rest of the library never imports it.
Its Python is ``RETARGET_BLENDER_PYTHON``, else ``.venv-blender/bin/python`` in the
working folder or the project's (``make verify-blender`` makes it). A conversion
takes seconds (Blender starts, imports, exports): each file is converted once per
process.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..core.errors import RetargetError

__all__ = ["as_glb", "blender_python", "convert"]

_SCRIPT = Path(__file__).with_name("_blender_script.py")


def blender_python() -> str:
    """The Python that has Blender's ``bpy`` (module docstring); a one-line error when
    there is none."""
    given = os.environ.get("RETARGET_BLENDER_PYTHON")
    if given:
        if not Path(given).is_file():
            raise RetargetError(f"RETARGET_BLENDER_PYTHON={given}: no such file")
        return given
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        found = base / ".venv-blender" / "bin" / "python"
        if found.is_file():
            return str(found)
    raise RetargetError(
        "FBX is read and written by Blender's bpy, in its own environment: run "
        "`make verify-blender` or set RETARGET_BLENDER_PYTHON to a Python with bpy"
    )


def convert(
    src: str | os.PathLike,
    dst: str | os.PathLike,
    *,
    source: str = "glb",
    written: str = "fbx",
    fps: float | None = None,
    timeout: float = 600.0,
) -> Path:
    """``src`` (a ``source`` file: ``"fbx"`` or ``"glb"``, a glTF) imported by Blender and
    exported as ``dst`` (``written``: ``"glb"`` or ``"fbx"``), atomically: to a temporary
    file beside ``dst``, then renamed. ``fps``: the scene's rate, at which Blender keys a
    glTF's seconds (its default, 24, resamples a 30 frames/s clip). Which format a path
    is, :mod:`retarget.io.formats` says."""
    src, dst = Path(src), Path(dst)
    if not src.is_file():
        raise RetargetError(f"{src}: no such file")
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.stem}.", suffix=f".{written}", dir=dst.parent)
    os.close(fd)
    try:
        run = subprocess.run(
            [blender_python(), str(_SCRIPT), source, str(src.resolve()), written, tmp]
            + ([repr(float(fps))] if fps else []),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        last = (run.stdout.strip().splitlines() or [""])[-1]
        if run.returncode != 0 or last != "ok" or Path(tmp).stat().st_size == 0:
            why = (
                last
                if last.startswith("error:")
                else (run.stderr.strip().splitlines() or ["?"])[-1]
            )
            raise RetargetError(f"{src}: Blender could not convert it to {written} ({why})")
        os.chmod(tmp, 0o644)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dst


@functools.lru_cache(maxsize=16)
def _cached(path: str, mtime: float, size: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="retarget-fbx-"))
    atexit.register(shutil.rmtree, folder, True)  # (gone with the process, not left in /tmp)
    return convert(path, folder / (Path(path).stem + ".glb"), source="fbx", written="glb")


def as_glb(path: str | os.PathLike) -> Path:
    """An FBX file as a GLB Blender made of it (once per file and process; a temporary
    file)."""
    p = Path(path).resolve()
    if not p.is_file():
        raise RetargetError(f"{path}: no such file")
    stat = p.stat()
    return _cached(str(p), stat.st_mtime, stat.st_size)
