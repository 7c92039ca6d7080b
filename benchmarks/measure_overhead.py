"""Client overhead of `goldenal measure` per request, against the server's own time.

Sends the same prompts, alternating in one loop so that machine noise hits
both alike:
  bare      one streaming chat completion per prompt with httpx, nothing else
  measure   goldenal.measure at concurrency 1 (a /metrics scrape and its
            parse after every request, per-request records, the run directory)
and reports per request: the median wall time of each, measure's extra time,
and the ratio measure / bare.  Where the server reports its own time (llama.cpp
`timings.prompt_ms + predicted_ms`), the client's share of the wall time is
shown too.  Target: measure <= 1.10x bare on the stub server at its default
pace (about 0.2 s of server time per request, far shorter than a real
4096-token request): the scrape after every request (one GET, one parse of
the speculative families) and the records cost a few milliseconds; on real
servers, whose requests take seconds, the ratio is closer still to 1.
Against a real llama-server (the tiny random model of
measurements/llamacpp-tiny-random-2026-12 with its K=3 draft, its 12 prompts,
128 tokens, 5 rounds, one loaded 2-core machine): bare 177.5 ms, measure
180.4 ms per request (1.016x, +2.9 ms), server's own time 169.4 ms.

    python benchmarks/measure_overhead.py                       # the test stub
    python benchmarks/measure_overhead.py --url http://127.0.0.1:8080 --prompts p.jsonl
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


async def bare_requests(url, prompts, max_tokens):
    import httpx

    times, server = [], []
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        model = (await client.get("/v1/models")).json()["data"][0]["id"]
        for p in prompts:
            body = {"model": model, "messages": p.payload(), "stream": True,
                    "max_tokens": max_tokens, "temperature": 0.0}
            t0 = time.perf_counter()
            timings = None
            async with client.stream("POST", "/v1/chat/completions", json=body) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data:") and line[5:].strip() != "[DONE]":
                        chunk = json.loads(line[5:])
                        timings = chunk.get("timings") or timings
            times.append(time.perf_counter() - t0)
            if timings and "predicted_ms" in timings:
                server.append((timings.get("prompt_ms", 0) + timings["predicted_ms"]) / 1e3)
    return times, server


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server (default: start the test stub)")
    parser.add_argument("--prompts", help="prompt file (default: 20 generated prompts)")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.02,
                        help="stub: seconds per streamed step (default 0.02)")
    args = parser.parse_args()

    import goldenal
    from goldenal.measuring.measure import Prompt, load_prompts

    stub = None
    if args.url is None:
        sys.path.insert(0, os.path.join(HERE, "..", "tests"))
        from measure_stub import StubServer

        stub = StubServer("llamacpp", k=args.k)
        stub.delay = args.delay
        url = stub.url
    else:
        url = args.url
    try:
        prompts = load_prompts(args.prompts) if args.prompts else tuple(
            Prompt(f"p{i}", ((("content", f"benchmark prompt number {i}"), ("role", "user")),))
            for i in range(20))
        bare, measured, server = [], [], []
        for _ in range(args.rounds):
            times, own = asyncio.run(bare_requests(url, prompts, args.max_tokens))
            bare.extend(times)
            server.extend(own)
            with tempfile.TemporaryDirectory() as tmp:
                result = goldenal.measure(url, out=os.path.join(tmp, "run"), model="bench",
                                          k=args.k, thinking="off", prompts=prompts,
                                          max_tokens=args.max_tokens, progress=False)
                cell, = result.cells
                measured.append(cell.wall_seconds / len(cell.requests))
    finally:
        if stub is not None:
            stub.stop()
    b = statistics.median(bare)
    m = statistics.median(measured)
    print(f"requests per round   {len(prompts)}  rounds {args.rounds}")
    print(f"bare client          {b * 1e3:8.2f} ms/request (median)")
    print(f"measure              {m * 1e3:8.2f} ms/request (median over rounds)")
    print(f"measure overhead     {(m - b) * 1e3:8.2f} ms/request")
    print(f"ratio measure/bare   {m / b:8.3f}x   (target <= 1.10x)")
    if server:
        s = statistics.median(server)
        print(f"server's own time    {s * 1e3:8.2f} ms/request (timings.prompt_ms + "
              "predicted_ms)")
        print(f"client share         {(m - s) / m:8.1%} of measure's wall time per request")
    return 0 if m / b <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
