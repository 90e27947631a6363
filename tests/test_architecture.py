"""Architecture contracts (DESIGN.md "Architecture", issue 10): ``lint-imports`` keeps every
contract of ``[tool.importlinter]`` in pyproject.toml (compiler never imports runtime; no import
cycles inside compiler; runtime.analysis imports neither report, pipeline, families nor the
executors)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def _lint_imports() -> str:
    beside = Path(sys.executable).parent / "lint-imports"
    found = str(beside) if beside.exists() else shutil.which("lint-imports")
    assert found, "lint-imports is missing: pip install 'audit-compiler[test]' (import-linter)"
    return found


def test_import_contracts_are_kept():
    # analyse this checkout, not whatever copy of the packages is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([_lint_imports(), "--no-cache", "--config", str(REPO / "pyproject.toml")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout, proc.stdout
