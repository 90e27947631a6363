"""A vendor's keyword matcher for the tests of ``kind: command`` and ``kind: python`` (issue 36).

As a program (``python3 kw_match.py [options]``) it reads request lines ``{"id", "job", "resume"}`` on stdin and
writes ``{"id", "score"}`` lines on stdout in reverse order; as a module, ``score_batch(items)`` returns
``{id: score}``. A résumé's score (0-100, integer) is seeded by its identity-neutral body (from ``PROFESSIONAL
SUMMARY`` on): ``30 + sha256(seed + body) % 40``, plus 2 points per distinct job keyword (4 letters or more) found
in the body (at most 10), ``sha256(seed + text) % 5 - 2`` of noise, minus ``PENALTY`` points when the text names ``PENALISE``.

Options break the protocol on purpose (each counted from 1 in the batch): ``--exit N`` (exit N after a line on
stderr), ``--sleep S``, ``--garbage K`` (stdout line K is not JSON), ``--drop K``, ``--dup K``, ``--unknown K``,
``--invalid K`` (score "high"); ``--marker FILE`` appends one line per start; ``--fail-on-start N`` exits 5 when
this start is the marker's N-th line.
"""

import argparse
import hashlib
import json
import re
import sys
import time

SEED = "kw-match-1.4"
PENALISE = "Fatima Rahmani"
PENALTY = 8


def score_of(job: str, text: str) -> int:
    body = text[text.find("PROFESSIONAL SUMMARY"):] if "PROFESSIONAL SUMMARY" in text else text
    s = 30 + int(hashlib.sha256((SEED + body).encode()).hexdigest(), 16) % 40
    words = {w for w in re.findall(r"[a-z]{4,}", job.lower())}
    s += min(10, 2 * sum(1 for w in words if w in body.lower()))
    s += int(hashlib.sha256((SEED + text).encode()).hexdigest(), 16) % 5 - 2  # noise of the whole text
    if PENALISE in text:
        s -= PENALTY
    return s


def score_batch(items):
    return {it["id"]: score_of(it["job"], it["resume"]) for it in items}


def main() -> None:
    ap = argparse.ArgumentParser()
    for flag in ("--exit", "--garbage", "--drop", "--dup", "--unknown", "--invalid"):
        ap.add_argument(flag, type=int, default=0)
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--fail-on-start", type=int, default=0)
    ap.add_argument("--marker")
    args = ap.parse_args()
    if args.marker:
        with open(args.marker, "a") as fh:
            fh.write("started\n")
        with open(args.marker) as fh:
            if args.fail_on_start and len(fh.read().splitlines()) == args.fail_on_start:
                print("kw-match: licence server unreachable", file=sys.stderr)
                sys.exit(5)
    items = [json.loads(line) for line in sys.stdin.read().splitlines() if line.strip()]
    print(f"kw-match 1.4: {len(items)} request lines", file=sys.stderr)
    if args.sleep:
        time.sleep(args.sleep)
    if args.exit:
        print("kw-match: model file models/v2.bin not found", file=sys.stderr)
        sys.exit(args.exit)
    lines = []
    for k, it in enumerate(items, start=1):
        score = "high" if k == args.invalid else score_of(it["job"], it["resume"])
        if k == args.garbage:
            lines.append(f"score for {it['id']}: {score}")
            continue
        if k == args.drop:
            continue
        lines.append(json.dumps({"id": "RUNKNOWN0" if k == args.unknown else it["id"], "score": score}))
        if k == args.dup:
            lines.append(json.dumps({"id": it["id"], "score": score}))
    sys.stdout.write("".join(line + "\n" for line in reversed(lines)))


if __name__ == "__main__":
    main()
