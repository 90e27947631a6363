"""Re-record tests/data/llm-answers/: the local model's answers that the ``llm_replay`` tests replay.

Serves SmolLM2-135M (``runtime.llm.serve``) on the fixed port the replayed specs name
(``LLM_REPLAY_PORT`` in tests/conftest.py: ``api_base`` is part of every answer's key, see
runtime/llm/cache.py), runs the tests marked ``llm_replay`` against it from empty task stores
(pytest with ``$AUDIT_RECORD_LLM_ANSWERS`` set: their assertions are checked on the live answers),
and replaces the recording with the ``llm-*`` task records those runs stored and the blobs they name.
The recording is left as it was when a test fails or the result is over the size limit.

Needs the llm extra (``make install-llm``); a few minutes on 2 cores::

    python scripts/record_llm_answers.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
#: The recording's size limit (issue 26): the task records and their blobs, in bytes.
MAX_BYTES = 2 * 1024 * 1024


def folder_bytes(root: Path) -> int:
    """Total size of the files under ``root``."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. -x)")
    args = ap.parse_args(argv)

    sys.path[:0] = [str(REPO), str(TESTS)]
    from conftest import LLM_ANSWERS, LLM_RECORD_ENV, LLM_REPLAY_PORT, LLM_REPLAY_URL, port_open

    from runtime.llm import serve

    if port_open(LLM_REPLAY_PORT):
        print(f"error: something already listens on 127.0.0.1:{LLM_REPLAY_PORT}; stop it first", file=sys.stderr)
        return 2
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_TELEMETRY="False", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1")
    with tempfile.TemporaryDirectory(prefix="llm-answers-") as tmp:
        collected = Path(tmp) / "answers"
        collected.mkdir()
        print(f"serving the local model on {LLM_REPLAY_URL} ...", flush=True)
        proc, _ = serve.start(LLM_REPLAY_PORT, log=Path(tmp) / "server.log")
        try:
            rc = subprocess.call([sys.executable, "-m", "pytest", "tests", "-m", "llm_replay", "-q",
                                  "-p", "no:cacheprovider", *args.pytest_args],
                                 cwd=REPO, env={**env, LLM_RECORD_ENV: str(collected)})
        finally:
            serve.stop(proc)
        if rc != 0:
            print(f"error: the llm_replay tests failed against the live server (pytest exit {rc}); "
                  f"the recording {LLM_ANSWERS.relative_to(REPO)}/ is unchanged", file=sys.stderr)
            return 1
        records = sorted((collected / "tasks").glob("llm-*.json"))
        size = folder_bytes(collected)
        if not records:
            print("error: the llm_replay tests stored no answer; the recording is unchanged", file=sys.stderr)
            return 1
        if size > MAX_BYTES:
            print(f"error: the recording would take {size:,} bytes (limit {MAX_BYTES:,}); make the replayed "
                  "specs smaller; the recording is unchanged", file=sys.stderr)
            return 1
        for part in ("tasks", "objects"):
            shutil.rmtree(LLM_ANSWERS / part, ignore_errors=True)
            shutil.copytree(collected / part, LLM_ANSWERS / part)
    print(f"wrote {len(records)} answers ({size:,} bytes) to {LLM_ANSWERS.relative_to(REPO)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
