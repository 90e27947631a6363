"""Digests of the result CSVs of every shipped spec that runs offline (issue 28, "Must show").

For each ``specs/*.yaml`` except ``llm-hosted.yaml`` (hosted models, needs keys), the script copies
the ``specs/`` folder (with ``jobs/``; no lock, plan, ledger, store or cache) into a temporary folder,
runs ``audit compile`` and ``audit execute SPEC --out TMP --store TMPSTORE --quiet`` there (unsigned:
no ``$AUDIT_KEY_DIR``, an empty ``$XDG_CONFIG_HOME``; ``PYTHONHASHSEED=0``) and records the sha256 of
every ``*.csv`` of the run folder (subfolders included, named by their path in the run folder,
sorted). The shipped specs' folder is never written to. ``llm-local.yaml`` gets the local model
server (:func:`runtime.llm.serve.start`) on the port its ``api_base`` names (8765), started afresh
for each run of that spec and stopped after it; ``pip install -e '.[llm]'`` (``make install-llm``)
provides it.

Output: JSON ``{spec file name: {csv name: sha256}}`` with sorted keys, on stdout or in ``--out``.
With ``--repeat N`` every spec runs N times from empty stores; a spec whose digests differ between
its runs gets ``"deterministic": false`` and ``"varying": [csv names whose digest changed]`` in its
record (the digests recorded are the first run's); a spec whose runs agree gets no marker, so a
file made with ``--repeat 2`` compares equal to one made with ``--repeat 1`` when nothing moved.
``--update`` keeps the other specs' records of an existing ``--out`` file (run some specs now and
the rest later). A run that exits 5 (validity INCONCLUSIVE) is kept and
its record holds ``"exit_code": 5``; any other failure records ``"error"`` and the script exits 1.

What it is for: proving that a refactor moved no result. Run it on the code before the change and
on the code after it, with the same options, and compare the two files; identical files mean no
result CSV moved. The code measured is the one ``python -m runtime.cli`` imports (put the checkout
under test first on ``PYTHONPATH``; the script names its folder on stderr)::

    git worktree add /tmp/base <commit>
    cd /tmp/base && PYTHONPATH=/tmp/base python /path/to/scripts/result_digests.py --repeat 2 \\
        --out bench/results/result_digests_before.json
    cd /work/main && PYTHONPATH=/work/main python scripts/result_digests.py --repeat 2 \\
        --out bench/results/result_digests_after.json
    cmp bench/results/result_digests_before.json bench/results/result_digests_after.json

``--spec example.yaml`` (repeatable) runs only the named specs. Progress lines go to stderr.
``--no-extra-bufts`` serves the local model with llama.cpp's extra buffer types (AMX tiles, repacked
weights) off: a llama-cpp-python built with ``GGML_NATIVE`` on a CPU that lists AMX faults on its
first batch of more than one token (``ldtilecfg``) in a virtual machine that does not grant AMX; both
runs of a comparison must then use it. From issue 28 on, ``runtime.llm.serve`` always runs the server
that way (:mod:`runtime.llm.llama_main`); the flag matters for an older checkout only.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Specs that need a network service the script cannot provide (hosted models, API keys).
NOT_OFFLINE = {"llm-hosted.yaml"}
#: Specs that need the local model server (runtime/llm/serve.py).
NEEDS_LOCAL_LLM = {"llm-local.yaml"}
#: Files beside a spec that a run writes (git-ignored): never copied into the temporary folder.
IGNORED = ("*.lock.json", "*.plan.json", "*.lock.sig.json", "*.locks.jsonl", ".audit-store", ".audit-cache",
           "reports", "__pycache__")
#: ``python -c`` program that runs ``python -m llama_cpp.server`` with ``use_extra_bufts`` off in
#: every model it loads (``--no-extra-bufts``): no AMX / repacked weight buffers, which fault
#: (``ldtilecfg``, SIGSEGV on any batch of more than one token) where the CPU lists AMX but the
#: virtual machine does not grant it.
NO_EXTRA_BUFTS_SERVER = """\
import runpy, llama_cpp, llama_cpp.llama
_defaults = llama_cpp.llama_model_default_params
def _no_extra_bufts():
    params = _defaults()
    params.use_extra_bufts = False
    return params
llama_cpp.llama_model_default_params = llama_cpp.llama.llama_cpp.llama_model_default_params = _no_extra_bufts
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
#: Exit codes of ``audit execute`` whose run folder is a result (0 done, 5 validity INCONCLUSIVE).
RESULT_EXITS = (0, 5)


def say(msg: str) -> None:
    """One progress line on stderr."""
    print(f"[result_digests] {msg}", file=sys.stderr, flush=True)


def code_root() -> Path:
    """The checkout whose ``runtime`` package ``python -m runtime.cli`` imports (not executed here)."""
    spec = importlib.util.find_spec("runtime")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("result_digests: the package 'runtime' is not importable; put the checkout on PYTHONPATH")
    return Path(list(spec.submodule_search_locations)[0]).resolve().parent


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def csv_digests(run_dir: Path) -> dict[str, str]:
    """sha256 of every regular ``*.csv`` file under ``run_dir``, by its relative POSIX path, sorted."""
    found = (p for p in run_dir.rglob("*.csv") if p.is_file() and not p.is_symlink())
    return {p.relative_to(run_dir).as_posix(): sha256(p) for p in sorted(found, key=lambda p: p.relative_to(run_dir).as_posix())}


def environment(tmp: Path) -> dict[str, str]:
    """The audit's environment: unsigned (no key directory), offline, fixed hash seed."""
    env = dict(os.environ)
    env.pop("AUDIT_KEY_DIR", None)
    config = tmp / "xdg-config"
    config.mkdir(exist_ok=True)
    env.update({"XDG_CONFIG_HOME": str(config), "PYTHONHASHSEED": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "LITELLM_TELEMETRY": "False", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    return env


def audit(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``python -m runtime.cli ARGS`` (the ``audit`` entry point, pyproject [project.scripts])."""
    return subprocess.run([sys.executable, "-m", "runtime.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)


def tail(proc: subprocess.CompletedProcess, n: int = 15) -> str:
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return "\n".join(lines[-n:])


def llm_port(spec_file: Path) -> int:
    """The local port the spec's ``api_base`` names (all of them must agree)."""
    ports = set(re.findall(r"api_base:\s*['\"]?http://127\.0\.0\.1:(\d+)", spec_file.read_text(encoding="utf-8")))
    if len(ports) != 1:
        raise RuntimeError(f"{spec_file.name}: expected one local api_base port, found {sorted(ports) or 'none'}")
    return int(ports.pop())


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start_server(port: int, log: Path, *, no_extra_bufts: bool):
    """:func:`runtime.llm.serve.start` on ``port`` (as tests/conftest.py's ``llm_server``); with
    ``no_extra_bufts`` the same server command runs through :data:`NO_EXTRA_BUFTS_SERVER`."""
    from runtime.llm import serve

    if not no_extra_bufts:
        return serve.start(port, log=log)
    command = serve.server_command

    def patched(*args, **kwargs):
        cmd = command(*args, **kwargs)
        if cmd[1:3] == ["-m", "runtime.llm.llama_main"]:  # a checkout whose server has them off already
            return cmd
        assert cmd[1:3] == ["-m", "llama_cpp.server"], cmd
        return [cmd[0], "-c", NO_EXTRA_BUFTS_SERVER, *cmd[3:]]

    serve.server_command = patched
    try:
        return serve.start(port, log=log)
    finally:
        serve.server_command = command


def run_once(specs_dir: Path, name: str, *, keep: bool, no_extra_bufts: bool = False) -> tuple[dict, float]:
    """Compile and execute one spec in a fresh temporary folder; (record, seconds)."""
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f"digest-{Path(name).stem}-"))
    server = None
    try:
        work = tmp / "specs"
        shutil.copytree(specs_dir, work, ignore=shutil.ignore_patterns(*IGNORED))
        env = environment(tmp)
        if name in NEEDS_LOCAL_LLM:
            port = llm_port(work / name)
            if port_open(port):
                raise RuntimeError(f"something already listens on 127.0.0.1:{port}; stop it (the script starts "
                                   "its own model server there)")
            say(f"{name}: starting the local model server on port {port}"
                + (" (use_extra_bufts off)" if no_extra_bufts else ""))
            server, _ = start_server(port, tmp / "llm-server.log", no_extra_bufts=no_extra_bufts)
        proc = audit(["compile", f"specs/{name}"], cwd=tmp, env=env)
        if proc.returncode != 0:
            return {"error": f"compile exit {proc.returncode}: {tail(proc)}"}, time.monotonic() - t0
        say(f"{name}: compiled ({time.monotonic() - t0:.0f} s); executing")
        proc = audit(["execute", f"specs/{name}", "--out", str(tmp / "out"), "--store", str(tmp / "store"), "--quiet",
                      "--unsigned"],
                     cwd=tmp, env=env)
        if proc.returncode not in RESULT_EXITS:
            return {"error": f"execute exit {proc.returncode}: {tail(proc)}"}, time.monotonic() - t0
        runs = [p for p in (tmp / "out").glob("*/*") if p.is_dir()]
        if len(runs) != 1:
            return {"error": f"expected one run folder under the output root, found {len(runs)}"}, time.monotonic() - t0
        record: dict = csv_digests(runs[0])
        if not record:
            return {"error": f"no CSV in the run folder {runs[0].name}"}, time.monotonic() - t0
        if proc.returncode != 0:
            record["exit_code"] = proc.returncode
        return record, time.monotonic() - t0
    except Exception as exc:  # one spec's failure is recorded; the others still run
        return {"error": f"{type(exc).__name__}: {exc}"}, time.monotonic() - t0
    finally:
        if server is not None:
            from runtime.llm import serve

            serve.stop(server)
        if keep:
            say(f"{name}: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def digest_spec(specs_dir: Path, name: str, repeat: int, keep: bool, no_extra_bufts: bool = False) -> dict:
    """The spec's record over ``repeat`` runs (see the module docstring)."""
    records = []
    for i in range(repeat):
        record, secs = run_once(specs_dir, name, keep=keep, no_extra_bufts=no_extra_bufts)
        state = "ERROR " + record["error"] if "error" in record else f"{len(record)} CSV files"
        say(f"{name}: run {i + 1}/{repeat} done in {secs:.1f} s: {state}")
        if "error" in record:
            return record
        records.append(record)
    first = records[0]
    varying = sorted({k for r in records[1:] for k in set(first) | set(r) if first.get(k) != r.get(k)})
    if varying:
        first = dict(first, deterministic=False, varying=varying)
        say(f"{name}: NOT deterministic over {repeat} runs: {', '.join(varying)}")
    elif repeat > 1:
        say(f"{name}: identical digests over {repeat} runs")
    return first


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="Write the JSON here (default: stdout).")
    ap.add_argument("--spec", action="append", default=[], metavar="NAME",
                    help="Run only this spec of specs/ (file name, e.g. example.yaml); repeatable.")
    ap.add_argument("--specs-dir", type=Path, help="The specs folder (default: specs/ of the checkout imported).")
    ap.add_argument("--repeat", type=int, default=1, help="Runs per spec, each from empty stores (default 1).")
    ap.add_argument("--update", action="store_true",
                    help="Keep the records of the specs not run now from the existing --out file.")
    ap.add_argument("--no-extra-bufts", action="store_true",
                    help="Serve the local model with llama.cpp's extra buffer types (AMX, repacked weights) off: "
                         "where the CPU lists AMX but the VM faults on it (the server dies with SIGSEGV).")
    ap.add_argument("--keep", action="store_true", help="Keep the temporary folders (their paths go to stderr).")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.update and not args.out:
        ap.error("--update needs --out")
    root = code_root()
    specs_dir = (args.specs_dir or root / "specs").resolve()
    if not specs_dir.is_dir():
        ap.error(f"no specs folder at {specs_dir}")
    shipped = sorted(p.name for p in specs_dir.glob("*.yaml") if p.name not in NOT_OFFLINE)
    wanted = [Path(s).name for s in args.spec] or shipped
    unknown = [s for s in wanted if s not in shipped]
    if unknown:
        ap.error(f"not an offline spec of {specs_dir}: {', '.join(unknown)} (offline specs: {', '.join(shipped)})")
    say(f"code: {root}; specs: {specs_dir}; python: {sys.executable}")
    result, failed = {}, False
    if args.update and args.out.is_file():
        try:
            result = json.loads(args.out.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            ap.error(f"--update: {args.out} is not a JSON file of this script ({exc})")
        if not isinstance(result, dict):
            ap.error(f"--update: {args.out} is not a JSON object")
    for name in sorted(set(wanted)):
        t0 = time.monotonic()
        say(f"{name}: start")
        result[name] = digest_spec(specs_dir, name, args.repeat, args.keep, args.no_extra_bufts)
        failed |= "error" in result[name]
        say(f"{name}: {time.monotonic() - t0:.1f} s in all")
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        say(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
