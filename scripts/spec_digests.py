"""Print the spec digest, plan digest and plan counts of every spec in ``specs/`` (and any spec given).

Used to check that a refactoring of the compiler leaves every resolved spec and plan byte-identical:
run it before and after with ``PYTHONPATH`` pointing at each checkout and compare the output
(``tests/test_lock.py::test_shipped_spec_digests_are_pinned`` pins the same values).

    PYTHONPATH=. python scripts/spec_digests.py > after.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from compiler import compile_spec
from compiler.hashing import digest
from compiler.plan import plan_digest

REPO = Path(__file__).resolve().parent.parent


def spec_digests(paths: list[Path]) -> dict[str, dict]:
    """``{spec name: {spec_digest, plan_digest, plan_full_digest, counts}}`` for each spec path."""
    out = {}
    for path in paths:
        c = compile_spec(path)
        out[path.name] = {"spec_digest": digest(c.resolved)["digest"],
                          "plan_digest": plan_digest(c.plan)["digest"],
                          "plan_full_digest": digest(c.plan)["digest"], "counts": c.plan["counts"]}
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((REPO / "specs").glob("*.yaml"))
    print(json.dumps(spec_digests(paths), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
