"""LLM call throughput through the runtime vs a plain loop of HTTP requests, same server, one run.

Starts the local model server (SmolLM2-135M via llama-cpp-python, ``runtime.llm.serve``) and, at
concurrency 1, 4 and 8, sends the same N screening requests twice:

- **plain**: ``concurrency`` threads POSTing the OpenAI-style JSON body to ``/v1/chat/completions``
  with ``urllib`` (no retries, no cache, no parsing);
- **runtime**: :class:`runtime.llm.client.LlmClient` (litellm, tenacity, semaphore, SQLite cache
  on a fresh file, so every request is a real call) plus :func:`runtime.systems.answers.parse_score`.

Both send the very same requests (messages, ``response_format`` with the JSON schema,
``max_tokens``, temperature, seed), so the server does the same work for both. They go in
``--rounds`` rounds that alternate which side runs first, so that load from other processes on a
shared machine falls on both alike. Reported: calls/s of each and the ratio runtime / plain
(goal >= 0.9); the absolute calls/s depend on the machine, the ratio is the result.

Run: ``.venv/bin/python bench/bench_llm.py [--n 24]``  (or ``make bench-llm``)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from compiler.llm import score_schema, template_text  # noqa: E402
from runtime.llm import serve  # noqa: E402
from runtime.llm.cache import ResponseCache  # noqa: E402
from runtime.store import TaskStore  # noqa: E402
from runtime.llm.client import Endpoint, LlmClient, response_format  # noqa: E402
from runtime.systems.answers import parse_score  # noqa: E402

MODEL = f"openai/{serve.MODEL_ALIAS}"
MAX_TOKENS = 16


def requests(n: int, tag: str) -> list[list[dict[str, str]]]:
    """n distinct screening prompts (distinct resumes, so no answer is served twice)."""
    system = template_text("system_llm_score.j2").strip()
    out = template_text("output_llm_score.j2").strip()
    return [[{"role": "system", "content": system},
             {"role": "user", "content": f"POSTING\nPosition: Data Analyst\nSQL, dashboards, 3 years.\n\n"
                                         f"APPLICANT\nAnalyst ({tag} #{i}), {2 + i % 7} years of SQL and "
                                         f"Power BI, degree in statistics.\n\n{out}"}]
            for i in range(n)]


def plain(url: str, batch, concurrency: int) -> float:
    body = {"model": serve.MODEL_ALIAS, "temperature": 0.7, "max_tokens": MAX_TOKENS, "seed": 1,
            "response_format": response_format("json_object_schema", score_schema(0, 100))}

    def one(msgs):
        data = json.dumps({**body, "messages": msgs}).encode()
        req = urllib.request.Request(f"{url}/chat/completions", data=data,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.loads(resp.read())["choices"][0]["message"]["content"]

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, batch))
    return len(batch) / (time.perf_counter() - t0)


def runtime(url: str, batch, concurrency: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(TaskStore(Path(tmp) / "store"))
        client = LlmClient(Endpoint(model=MODEL, api_base=url, temperature=0.7, max_tokens=MAX_TOKENS,
                                    response_format="json_object_schema", concurrency=concurrency,
                                    who="bench"), cache)
        schema = score_schema(0, 100)

        async def one(msgs):
            text, _ = await client.complete(msgs, seed=1, schema=schema)
            return parse_score(text)

        async def all_():
            return await asyncio.gather(*[one(m) for m in batch])

        t0 = time.perf_counter()
        asyncio.run(all_())
        rate = len(batch) / (time.perf_counter() - t0)
        assert client.counters.calls == len(batch) and client.counters.from_cache == 0
        cache.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=24, help="requests per method and concurrency level")
    ap.add_argument("--levels", default="1,4,8")
    ap.add_argument("--rounds", type=int, default=6, help="alternating rounds per concurrency level")
    args = ap.parse_args()
    proc, url = serve.start()
    try:
        import litellm  # noqa: F401  (import cost is paid once, outside the timings)

        runtime(url, requests(2, "warm-up"), 1)  # load the model pages, warm litellm's client
        print(f"{'concurrency':>11} {'plain calls/s':>14} {'runtime calls/s':>16} {'ratio':>7}")
        for c in (int(x) for x in args.levels.split(",")):
            # the very same requests (messages, seed) for both: the model writes the same answers, so
            # both sides generate the same number of tokens; only the client path differs. The
            # requests are sent in rounds, alternating which side goes first, so that load from
            # other processes on a shared machine falls on both sides alike.
            t_plain = t_runtime = 0.0
            size = max(c, args.n // args.rounds)
            for k in range(args.rounds):
                batch = requests(size, f"level-{c}-round-{k}")
                order = (plain, runtime) if k % 2 == 0 else (runtime, plain)
                for fn in order:
                    dt = size / fn(url, batch, c)
                    if fn is plain:
                        t_plain += dt
                    else:
                        t_runtime += dt
            n = size * args.rounds
            p, r = n / t_plain, n / t_runtime
            print(f"{c:>11} {p:>14.2f} {r:>16.2f} {r / p:>7.3f}", flush=True)
    finally:
        serve.stop(proc)


if __name__ == "__main__":
    main()
