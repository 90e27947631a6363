"""A stdlib vendor scoring API for the tests (issue 35 §2): ``POST /v1/score`` with ``{"items": [{"id", "job",
"resume"}]}`` answers ``{"scores": [{"id", "score"}], "model": ...}`` (shuffled), header ``X-Model-Version``.

A résumé's score is seeded by its text: ``30 + sha256(body) % 50`` for the identity-neutral body (from
``PROFESSIONAL SUMMARY`` on), ``+ sha256(salt + text) % 5 - 2`` of noise, and ``--penalty`` points less when the text
contains ``--penalise``. The n-th POST (counted from 1) answers 429 with ``Retry-After: 1`` when
``n % --every-429 == 1``, 503 when ``n % --every-503 == 3``, and stalls ``--stall-s`` seconds when
``n == --stall-at``. ``--auth`` makes every request without that ``Authorization`` value a 401 (whose body echoes the value
received, as careless servers do). Every
request is one line of ``--log``: ``{n, status, sha256 of the body, ids}``.

    python tests/http_stub.py --port 8799 --log requests.jsonl --penalise "Fatima Rahmani"
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def score_of(text: str, penalise: str | None, penalty: int, salt: str = "c") -> int:
    """The stub's score of one résumé (module docstring); ``salt`` seeds the noise."""
    body = text[text.find("PROFESSIONAL SUMMARY"):] if "PROFESSIONAL SUMMARY" in text else text
    s = 30 + int(hashlib.sha256(body.encode()).hexdigest(), 16) % 50
    s += int(hashlib.sha256((salt + text).encode()).hexdigest(), 16) % 5 - 2
    if penalise and penalise in text:
        s -= penalty
    return s


def make_handler(args):
    lock = threading.Lock()
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                count[0] += 1
                n = count[0]
            sha = hashlib.sha256(raw).hexdigest()
            try:
                req = json.loads(raw)
                items = req["items"]
            except (ValueError, KeyError, TypeError):
                return self._send(n, sha, [], 400, b"bad request: not the expected JSON\n")
            ids = [it.get("id") for it in items]
            if args.auth is not None and self.headers.get("Authorization") != args.auth:
                got = self.headers.get("Authorization") or ""
                return self._send(n, sha, ids, 401, f"unauthorized: token {got} is not valid\nsee the docs\n".encode())
            if args.every_429 and n % args.every_429 == 1:
                return self._send(n, sha, ids, 429, b"slow down\n", {"Retry-After": "1"})
            if args.every_503 and n % args.every_503 == 3:
                return self._send(n, sha, ids, 503, b"busy\n")
            if n == args.stall_at:
                time.sleep(args.stall_s)
                return self._send(n, sha, ids, 599, b"late\n")  # the client gave up long ago
            answers = [{"id": it.get("id"), "score": score_of(it.get("resume") or "", args.penalise, args.penalty)}
                       for it in items]
            random.Random(sha).shuffle(answers)
            body = json.dumps({"scores": answers, "model": args.model}).encode()
            self._send(n, sha, ids, 200, body, {"X-Model-Version": args.model, "Content-Type": "application/json"})

        def _send(self, n, sha, ids, status, body, headers=None) -> None:
            if args.log:
                with lock, open(args.log, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"n": n, "status": status, "sha256": sha, "ids": ids,
                                        "auth": self.headers.get("Authorization")}) + "\n")
            try:
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client timed out and left
                pass

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", default=None)
    ap.add_argument("--penalise", default=None)
    ap.add_argument("--penalty", type=int, default=8)
    ap.add_argument("--every-429", type=int, default=0)
    ap.add_argument("--every-503", type=int, default=0)
    ap.add_argument("--stall-at", type=int, default=0)
    ap.add_argument("--stall-s", type=float, default=3.0)
    ap.add_argument("--auth", default=None)
    ap.add_argument("--model", default="kw-matcher 2.3")
    args = ap.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args)).serve_forever()


if __name__ == "__main__":
    main()
