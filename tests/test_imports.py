"""The direction of the imports (DESIGN.md): the contracts of pyproject.toml's
``[tool.importlinter]`` hold, and they fail when a bad import is added.

The contracts (import-linter): the layers core <- tasks/environment <- ik/editing/filters/
physics/online <- methods <- run/batch <- cli/viz; no cycle among the modules of any
package; a private module (``_name``) imported only inside its package. Beside them, a
check import-linter cannot make: no private *name* (``from ..x import _f``) is taken
from another package.
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
    """A copy of the package with ``line`` appended to ``module`` (a path in it)."""
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "_three")
    shutil.copytree(PACKAGE, src / "retarget", ignore=skip)
    target = src / "retarget" / module
    target.write_text(target.read_text() + f"\n{line}\n")
    return src


@pytest.mark.parametrize(
    ("module", "line", "expected"),
    [
        # against the layers: the core importing a method
        ("quat.py", "from .methods import get_method", "retarget.quat -> retarget.methods"),
        # against the layers: a solver importing the editing layer above it
        ("ik/numeric.py", "from ..editing import edit", "retarget.ik.numeric -> retarget.editing"),
        # a cycle inside a package
        ("environment/_kinds.py", "from . import shapes", "No cycles are allowed in retarget.env"),
    ],
)
def test_the_import_check_fails_on_a_bad_import(
    tmp_path: Path, module: str, line: str, expected: str
) -> None:
    run = lint_imports(_copy_with(tmp_path, module, line))
    assert run.returncode != 0
    assert expected in run.stdout, run.stdout


def _private_names_from_other_packages(path: Path) -> list[str]:
    """``from X import _name`` in ``path`` where X is not in the module's own package
    (a private module of a package above it, such as ``retarget._arrays``, is allowed:
    its names are that package's toolbox)."""
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1]  # the package the module is in (for __init__, its own)
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
        owner = source[:-1] if source[-1].startswith("_") else source
        inside = owner[: len(package)] == package[: len(owner)] and len(owner) <= len(package)
        same_package = source[: len(package)] == package or inside
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__") and not same_package:
                bad.append(f"{rel}:{node.lineno} from {'.'.join(source)} import {alias.name}")
    return bad


def test_no_private_name_crosses_a_package() -> None:
    paths = sorted(PACKAGE.rglob("*.py"))
    bad = [b for path in paths for b in _private_names_from_other_packages(path)]
    assert not bad, "\n".join(bad)


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
