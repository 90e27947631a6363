"""The bad-input fuzzer at length (issue 14): 10,000 mutated specs, and the cost of the largest spec.

Each case is one valid spec with one mutation (``tests/spec_fuzz.py``: values of every kind, keys
from the current schema, deleted lines, control characters, tags, anchors and merge keys, alias
bombs, deep nesting, BOM, CRLF), validated in this process exactly as ``audit validate`` does. A
case passes when it exits 0 or 2 within 10 s and every exit 2 is located inside the mutated span
(or at its enclosing key; a YAML syntax error where the parser meets it). The test
(``tests/test_bad_input.py``) runs the same fuzzer for about 30 s.

Then the size cap: a valid spec just under 256 KB (long job descriptions and comments) is
validated in a fresh process, which reports its wall time and peak memory (goal: < 2 s, < 200 MB).

    .venv/bin/python bench/fuzz_specs.py [--cases 10000] [--seed 14]

Output: ``bench/results/fuzz_specs.md`` / ``.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from spec_fuzz import BASES, SCORES, check, mutate, run_case  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def largest_spec(folder: Path) -> Path:
    """A valid spec of just under 256 KB: the fuzz base with 40 jobs of long descriptions, padded."""
    from compiler.load import MAX_BYTES

    base = BASES[0]
    jobs = "jobs:\n" + "".join(
        f"  - id: j{i}\n    description: \"{'Analyse data and report to the team. ' * 100}\"\n" for i in range(1, 41))
    text = base.replace("jobs:\n  - id: j1\n", jobs)
    line = "# padding line 000000 " + "x" * 60 + "\n"
    room = MAX_BYTES - 100 - len(text.encode())
    if room < 0:
        raise ValueError("the base spec alone exceeds the cap; shorten the job descriptions")
    text += "".join(f"# padding line {i:06d} " + "x" * 60 + "\n" for i in range(room // len(line)))
    (folder / "scores.csv").write_text(SCORES)
    spec = folder / "big.yaml"
    spec.write_text(text)
    return spec


def measure_large(spec: Path) -> dict:
    code = textwrap.dedent(f"""
        import resource, time, json
        from compiler.load import load_spec
        t = time.perf_counter()
        try:
            load_spec({str(spec)!r})
            ok = True
        except Exception as err:
            ok = repr(err)[:200]
        print(json.dumps({{"seconds": time.perf_counter() - t,
                          "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "ok": ok}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return {"bytes": spec.stat().st_size, **json.loads(out.stdout.strip().splitlines()[-1])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=14)
    args = ap.parse_args()
    kinds: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures, times = [], []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            case = mutate(random.Random(args.seed * 1_000_003 + i))
            code, err, seconds = run_case(case, Path(tmp) / "case")
            times.append(seconds)
            problem = check(case, code, err, seconds)
            kinds[case.what][f"exit {code}"] += 1
            if problem:
                kinds[case.what]["failed"] += 1
                failures.append({"case": i, "what": case.what, "problem": problem[:500]})
            if (i + 1) % 1000 == 0:
                print(f"{i + 1}/{args.cases} cases, {len(failures)} failed, {time.time() - t0:.0f} s", flush=True)
        large = measure_large(largest_spec(Path(tmp)))
    times.sort()
    summary = {"cases": args.cases, "seed": args.seed, "failed": len(failures), "failures": failures[:50],
               "by_mutation": {k: dict(v) for k, v in sorted(kinds.items())},
               "seconds": {"median": times[len(times) // 2], "p99": times[int(len(times) * 0.99)], "max": times[-1]},
               "largest_spec": large, "date": time.strftime("%Y-%m-%d")}
    (RESULTS / "fuzz_specs.json").write_text(json.dumps(summary, indent=1))
    lines = [f"# Spec fuzzer ({summary['date']}; {args.cases} cases, seed {args.seed})", "",
             f"**{len(failures)} failed** (a failure: an exit other than 0 or 2, a traceback, over 10 s, or an "
             "exit 2 not located in the mutated span).", "",
             "| mutation | cases | exit 0 | exit 2 | failed |", "|---|---:|---:|---:|---:|"]
    for k, v in summary["by_mutation"].items():
        lines.append(f"| {k} | {sum(n for key, n in v.items() if key.startswith('exit'))} | {v.get('exit 0', 0)} | "
                     f"{v.get('exit 2', 0)} | {v.get('failed', 0)} |")
    s = summary["seconds"]
    lines += ["", f"Validation time per case: median {s['median'] * 1000:.0f} ms, p99 {s['p99'] * 1000:.0f} ms, "
                  f"max {s['max'] * 1000:.0f} ms (in process, shared 2-core machine).",
              f"Largest spec ({large['bytes']:,} bytes, under the 262,144-byte cap): loaded in {large['seconds']:.2f} s, "
              f"peak {large['peak_mb']:.0f} MB in a fresh process (goal < 2 s, < 200 MB); result: {large['ok']}."]
    (RESULTS / "fuzz_specs.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
