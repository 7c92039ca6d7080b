"""Drive a llama-server and leave a run directory that ``ingest`` and ``verify`` read.

A few greedy completions with ``ignore_eos`` (a random model may emit its end
token at any point) between two ``/metrics`` scrapes.  Each request carries its
own ``seed``: llama-server seeds its synthetic-acceptance generator per task
from the request's seed, else the server's ``--seed``, and only draws a fresh
one when neither is set (``tools/server/server-context.cpp``), so with one fixed
seed every request would replay the same accept/reject sequence and the steps
would not be independent draws. the pair is the cell's
window (readers/prometheus.py differences it), and ``run.yaml`` names the
cell.  Responses are kept beside it with llama.cpp's per-response ``timings``
(``draft_n``, ``draft_n_accepted``).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import yaml

PROMPTS = ("def fibonacci(n):", "// parse a CSV line in C\n", "SELECT name FROM users WHERE",
           "#!/bin/sh\n# back up the home directory\n", "class Stack:\n    def push(self, x):")


def scrape(url: str, path: Path) -> Path:
    response = httpx.get(url + "/metrics", timeout=30)
    response.raise_for_status()
    path.write_text(response.text)
    return path


def complete(url: str, prompt: str, max_tokens: int, seed: int) -> dict:
    response = httpx.post(url + "/v1/completions", timeout=300, json={
        "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
        "seed": seed})
    response.raise_for_status()
    return response.json()


def measure_run(url: str, out: Path, *, k: int, requests: int = 10, max_tokens: int = 400,
                identity: dict | None = None, thinking: str = "on") -> Path:
    """One cell: scrape, ``requests`` completions, scrape; returns the run directory."""
    out.mkdir(parents=True, exist_ok=True)
    scrape(url, out / "metrics_before.prom")
    answers = [complete(url, PROMPTS[i % len(PROMPTS)], max_tokens, seed=1000 + i)
               for i in range(requests)]
    scrape(url, out / "metrics_after.prom")
    (out / "responses.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    manifest = {"run": out.name, **(identity or {}),
                "cells": [{"thinking": thinking, "k": k,
                           "files": ["metrics_before.prom", "metrics_after.prom"]}]}
    (out / "run.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return out


def response_totals(out: Path) -> tuple[int, int]:
    """Sum of ``timings.draft_n`` and ``timings.draft_n_accepted`` over the responses."""
    drafted = accepted = 0
    for line in (out / "responses.jsonl").read_text().splitlines():
        timings = json.loads(line)["timings"]
        drafted += timings.get("draft_n", 0)
        accepted += timings.get("draft_n_accepted", 0)
    return drafted, accepted
