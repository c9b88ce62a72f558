"""The direction of the imports (DESIGN.md): the contracts of pyproject.toml's
``[tool.importlinter]`` hold, and they fail when a bad import is added.

The contracts (import-linter): the packages in layers, core <- environment <- humanoid
<- tasks, io <- ik, filters <- editing, physics <- online <- methods, targets <-
pipeline <- viz <- cli; no cycle among the modules of any package; a private module
(``_name``) imported only inside its package, but for compiled kernels calling each
other. Beside them, checks import-linter cannot make: every package is in a layer and
at most six modules sit at the top (so none escapes the layers), and no private *name*
(``from ..x import _f``) is taken from another package, a top-level module included.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "retarget"


def lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts on the package found in ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    script = "import sys; from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run(
        [sys.executable, "-c", script, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_import_contracts_hold() -> None:
    run = lint_imports(SRC)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package with ``line`` appended to ``module`` (a path in it; made
    when it does not exist)."""
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "_three", "node_modules")
    shutil.copytree(PACKAGE, src / "retarget", ignore=skip)
    target = src / "retarget" / module
    text = target.read_text() if target.exists() else ""
    target.write_text(text + f"\n{line}\n")
    return src


@pytest.mark.parametrize(
    ("module", "line", "expected"),
    [
        # against the layers: the core importing a method
        (
            "core/quat.py",
            "from ..methods import get_method",
            "retarget.core.quat -> retarget.methods",
        ),
        # against the layers: a solver importing the editing layer above it
        ("ik/numeric.py", "from ..editing import edit", "retarget.ik.numeric -> retarget.editing"),
        # against the layers: the humanoid model importing a kind of target
        (
            "humanoid/world.py",
            "from ..targets import open_target",
            "retarget.humanoid.world -> retarget.targets",
        ),
        # against the layers: a method importing the pipeline above it
        (
            "methods/copy.py",
            "from ..pipeline import retarget",
            "retarget.methods.copy -> retarget.pipeline",
        ),
        # a cycle inside a package
        ("environment/_kinds.py", "from . import shapes", "No cycles are allowed in retarget.env"),
        # a public module importing another package's compiled kernels
        (
            "online/puppetry.py",
            "from ..ik._kernels import limb",
            "retarget.online.puppetry -> retarget.ik._kernels",
        ),
    ],
)
def test_the_import_check_fails_on_a_bad_import(
    tmp_path: Path, module: str, line: str, expected: str
) -> None:
    run = lint_imports(_copy_with(tmp_path, module, line))
    assert run.returncode != 0
    assert expected in run.stdout, run.stdout


def _is_kernel(parts: list[str]) -> bool:
    """A module of a package's compiled kernels (``<package>._kernels...``)."""
    return "_kernels" in parts


def _private_names_from_other_packages(path: Path, src: Path = SRC) -> list[str]:
    """``from X import _name`` in ``path`` where X is in another package than the
    module's: the packages are those under ``retarget`` (``core``, ``ik``, ...); a
    top-level module (``retarget/x.py``) is in none, so it takes no private name from
    any package; a package's compiled kernels may call another's (``_kernels``)."""
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    home = parts[:2] if len(parts) > 2 or path.name == "__init__.py" else parts
    package = list(rel.parts[:-1])  # the package the module is in (for __init__, its own)
    bad = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            source = base + (node.module.split(".") if node.module else [])
        else:
            source = (node.module or "").split(".")
        if source[:1] != ["retarget"]:
            continue
        same = source[: len(home)] == home and len(source) >= len(home) >= 2
        kernels = _is_kernel(parts) and _is_kernel(source)
        for alias in node.names:
            private = alias.name.startswith("_") and not alias.name.startswith("__")
            if private and not (same or kernels):
                bad.append(f"{rel}:{node.lineno} from {'.'.join(source)} import {alias.name}")
    return bad


def test_no_private_name_crosses_a_package() -> None:
    paths = sorted(PACKAGE.rglob("*.py"))
    bad = [b for path in paths for b in _private_names_from_other_packages(path)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("module", "line"),
    [
        # a top-level module (the hole this check had: it took them to be in every package)
        ("__init__.py", "from .targets.robot.model import _load"),
        ("extra.py", "from .io.gltf import _Doc"),
        # a public module of one package taking another's private name
        ("targets/robot/contacts.py", "from ...io.formats import _holding"),
    ],
)
def test_the_private_name_check_fails_on_a_bad_import(
    tmp_path: Path, module: str, line: str
) -> None:
    src = _copy_with(tmp_path, module, line)
    bad = _private_names_from_other_packages(src / "retarget" / module, src)
    assert len(bad) == 1 and line.split()[-1] in bad[0], bad


def test_every_package_is_a_layer_and_few_modules_sit_at_the_top() -> None:
    """Every package of ``retarget`` is in the layers contract, so that no module is
    outside the direction of the imports; at most six modules sit at the top."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    named = {name.strip() for layer in layers for name in layer.split("|")}
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages == named, (packages - named, named - packages)
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 6, top


# -- the tests themselves: nothing needed is skipped silently under CI ------------------------

#: Calls that skip a test whatever ``CI`` says (conftest's ``missing`` and ``reference``
#: fail instead under ``CI=true``).
SILENT_SKIPS = {"importorskip", "skip", "skipif"}


def _silent_skips(source: str, name: str) -> list[str]:
    """``pytest.importorskip(…)``, ``pytest.skip(…)``, ``pytest.mark.skip(if)`` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in SILENT_SKIPS:
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id == "pytest":
                found.append(f"{name}:{node.lineno} pytest...{node.attr}")
    return found


def test_no_test_skips_what_ci_needs() -> None:
    """A test that needs data, a reference library or a browser goes through conftest's
    ``missing`` (or ``reference``): skipped locally, failed under ``CI=true``."""
    tests = Path(__file__).resolve().parent
    bad = [
        b
        for path in sorted(tests.glob("*.py"))
        if path.name != "conftest.py"
        for b in _silent_skips(path.read_text(encoding="utf-8"), path.name)
    ]
    assert not bad, "\n".join(bad)
    bad_test = "import pytest\n\ndef test_x():\n    pin = pytest.importorskip('pinocchio')\n"
    assert _silent_skips(bad_test, "t.py") == ["t.py:4 pytest...importorskip"]
    assert _silent_skips("@pytest.mark.skipif(True, reason='')\ndef f(): pass\n", "t.py")
