"""A stdlib OpenAI-compatible chat server for the tests (issue 35 §1): every answer *means* one score, written
in a form picked from the request's digest (reasoning blocks with drafts, fractions on the system's scale,
a separate ``reasoning_content`` field), so a reader that takes a draft for the answer scores the variants
differently and a correct one reads the same score everywhere.

    python tests/openai_stub.py --port 8799 --score 80 --log requests.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: Answers meaning ``{x}``; ``(content, reasoning_content)``. Drafts carry other numbers on purpose.
FORMS = (
    ('[THINK]First pass: {{"score": 35}} …[/THINK]\n{{"score": {x}}}', None),
    ("<think>It might be 8/10, or 35%.</think>\nScore: {x}", None),
    ('<think>draft {{"score": 20}}</think>{x}/100', None),
    ('{{"score": {x}}}', "I would say 35 at first, then 20/100."),
    ("Score: 35 as a first impression. Final answer: score: {x}", None),
    ('<Think>{{"score": 99}}</THINK>```json\n{{"score": "{x}"}}\n```', None),
)


def make_handler(score: int, log_path: str | None):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            body = json.dumps({"object": "list", "data": [{"id": "stub", "object": "model"}]}).encode()
            self._send(200, body)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            req = json.loads(raw or b"{}")
            digest = hashlib.sha256(json.dumps(req.get("messages"), sort_keys=True).encode()).digest()
            content, reasoning = FORMS[digest[0] % len(FORMS)]
            message = {"role": "assistant", "content": content.format(x=score)}
            if reasoning:
                message["reasoning_content"] = reasoning
            if log_path:
                with open(log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"path": self.path, "content": message["content"]}) + "\n")
            body = json.dumps({
                "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": req.get("model", "stub"),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }).encode()
            self._send(200, body)

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--score", type=int, default=80)
    ap.add_argument("--log", default=None)
    args = ap.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args.score, args.log)).serve_forever()


if __name__ == "__main__":
    main()
