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


def test_compiler_and_runtime_register_the_same_plug_ins():
    """Both sides of the compiler/runtime line list the same audit families (in the same run order),
    the same designs and the same system kinds (the compiler never imports the runtime, so nothing
    else ties them)."""
    import compiler.designs
    import compiler.families
    import compiler.systems
    import runtime.designs
    import runtime.families
    import runtime.systems

    assert list(compiler.families.family_ids()) == runtime.families.family_ids()
    assert sorted(compiler.designs.DESIGNS) == sorted(runtime.designs.registered())
    assert sorted(compiler.systems.SYSTEMS) == sorted(runtime.systems.registered())
    for fid, cls in runtime.families.registered().items():  # each half reads its declaration
        assert cls.declaration is compiler.families.FAMILIES[fid] and cls().needs is cls.declaration.needs, fid
    for did, cls in runtime.designs.registered().items():
        assert cls.declaration is compiler.designs.DESIGNS[did] and cls().provides == cls.declaration.provides, did
    for kind, cls in runtime.systems.registered().items():  # an adapter reads its compiler declaration
        assert cls.declaration is compiler.systems.SYSTEMS[kind] and cls.kind == kind, kind
        assert cls.provides == compiler.systems.SYSTEMS[kind].provides, kind
