"""Pinning llama.cpp's synthetic acceptance on a real ``llama-server``, and verifying it.

The golden cell is the test curve ``tiny_draft`` (tests/data/golden-tiny/: AL
1.70, 2.35, 2.83, 3.20 at K=1..4, thinking on); K=3 throughout, so the cell
is 2.83, the curve's per-position profile is [0.7, 0.65, 0.48] and the
minimum-variance schedule [1, 0.83, 0].  Each test starts its own server with
the knob as a user would write it (``goldenal emit`` / ``goldenal inject``),
measures it with ``goldenal measure`` (streaming chat completions, a
``/metrics`` scrape after every request) and runs ``goldenal verify`` on the
run directory, as a user does.

Every request carries its own ``seed`` (``--seed``: request i gets 1000 + i):
llama-server seeds its synthetic acceptance per request from the request's
seed, else the server's ``--seed``, and draws a fresh one only when neither
is set (``tools/server/server-context.cpp``), so the requests are independent
draws that repeat exactly from run to run.  ``--ignore-eos`` keeps a random
model from stopping early.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .llama_server import free_port

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden-tiny"
CELL = ["--k", "3", "--thinking", "on", "--golden-dir", str(GOLDEN)]
K = 3
PROMPTS = ("def fibonacci(n):", "// parse a CSV line in C\n", "SELECT name FROM users WHERE",
           "#!/bin/sh\n# back up the home directory\n", "class Stack:\n    def push(self, x):")


def goldenal(*args):
    script = shutil.which("goldenal", path=os.path.dirname(sys.executable))
    cmd = [script] if script else [sys.executable, "-m", "goldenal"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                          timeout=600)


def emit(*extra):
    done = goldenal("emit", "goldenal-tiny", *CELL, "--engine", "llamacpp", "--format", "args",
                    *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout.split(), done.stderr


def verify(run, *extra):
    return goldenal("verify", run, "--model", "goldenal-tiny", *CELL, *extra)


@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    """Ten prompts: the five above twice (each request has its own seed)."""
    path = tmp_path_factory.mktemp("prompts") / "prompts.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "prompt": PROMPTS[i % len(PROMPTS)]})
                            + "\n" for i in range(2 * len(PROMPTS))))
    return path


def measure(url, run, prompts, *, draft="draft.gguf", requests=10, max_tokens=400):
    """One cell with ``goldenal measure`` as a user runs it; returns the run directory."""
    done = goldenal("measure", url, "--out", run, "--model", "goldenal-tiny", "--draft", draft,
                    "--method", "draft-simple", "--k", K, "--thinking", "on",
                    "--prompts", prompts, "--requests", requests, "--max-tokens", max_tokens,
                    "--ignore-eos", "--seed", 1000)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"thinking on  K={K}  AL ")
    assert f"{requests} requests, 0 failed  per-request counts" in done.stdout
    assert "warning" not in done.stderr, done.stderr
    return run


@pytest.fixture(scope="module")
def golden():
    from goldenal.api import lookup

    value = lookup("goldenal-tiny", k=3, thinking="on", golden_dir=str(GOLDEN))
    assert value.text == "2.83"
    return value


def _run(start_llama, tiny_models, tmp_path, prompts, extra=(), draft="draft"):
    server = start_llama(target=tiny_models["target"], draft=tiny_models[draft], k=K,
                         extra=extra)
    try:
        run = measure(server.url, tmp_path / "run", prompts)
    finally:
        server.stop()
    return run, server.log.read_text(errors="replace")


def _records(run):
    return [json.loads(line) for line in (run / "requests_on_k3.jsonl").read_text()
            .splitlines()]


def _counts(run):
    """(steps, drafted, accepted, accepted per position) over the run's requests."""
    from goldenal.readers import load_run

    obs = load_run(run).observations()
    per_pos = [sum(o.accepted_per_position[i] for o in obs) for i in range(K)]
    return (sum(o.drafts for o in obs), sum(o.draft_tokens for o in obs),
            sum(o.accepted for o in obs), per_pos)


def test_distribution_pin_realises_the_curve_profile(start_llama, tiny_models, tmp_path,
                                                     prompts, golden):
    args, note = emit("--distribution")
    assert (args, note) == (["--spec-synth-rates", "0.7,0.65,0.48"], "")
    run, log = _run(start_llama, tiny_models, tmp_path, prompts, args)
    # the server states the schedule it draws from (common/speculative.cpp)
    assert "synthetic acceptance: n_max = 3, mean length = 2.830000, rates = [0.7, 0.65, 0.48]" \
        in log
    done = verify(run, "--profile", "curve")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("hit: realized AL 2.")
    assert "; per-position profile matches the expected profile (largest deviation " \
        in done.stdout
    # the curve's own profile is one real acceptance can show too: the verdict says so
    assert done.stdout.rstrip().endswith("real acceptance with these per-position rates gives "
                                         "this profile as well, so it does not show that the "
                                         "knob took effect")
    from goldenal.measuring.verify import verify as verify_run

    result = verify_run(run, golden, profile=[0.7, 0.65, 0.48])
    assert result.hit and result.mean_hit and result.profile_ok and result.engine == "llamacpp"
    # every request's counts are the server's counters around it, and agree with the
    # per-response timings it sent
    for record in _records(run):
        assert record["counts_from"] == "counter deltas around the request (concurrency 1)"
        assert (record["draft_tokens"], record["accepted"]) == (
            record["timings"]["draft_n"], record["timings"]["draft_n_accepted"])
    steps, _, accepted, per_pos = _counts(run)
    assert result.realized_al == 1 + accepted / steps
    assert sum(per_pos) == accepted and result.steps == steps > 1000


def test_default_emit_passes_the_default_verify(start_llama, tiny_models, tmp_path, prompts):
    """emit -> llama-server -> measure -> verify, each with its defaults, is a hit."""
    args, note = emit()
    assert (args, note) == (["--spec-synth-rates", "1,0.83,0"], "")
    assert emit("--distribution", "min-variance")[0] == args
    run, _ = _run(start_llama, tiny_models, tmp_path, prompts, args)
    done = verify(run)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "per-position profile matches the min-variance schedule (largest deviation " \
        in done.stdout
    assert done.stdout.rstrip().endswith(": the signature of a pinned knob (real acceptance "
                                         "does not accept exactly all or exactly none of the "
                                         "drafts at a position)")
    steps, _, _, per_pos = _counts(run)
    # exactly the schedule's support: every step accepts one or two drafts, never three
    assert per_pos[0] == steps and per_pos[2] == 0


def test_bare_length_hits_the_mean_on_another_schedule(start_llama, tiny_models, tmp_path,
                                                       prompts, golden):
    args, note = emit("--length")
    assert args == ["--spec-synth-len", "2.83"]
    assert note.startswith("note: llama.cpp realises --spec-synth-len 2.83 at K=3 as a "
                           "geometric schedule (survival [0.772, 0.597, 0.461])")
    run, log = _run(start_llama, tiny_models, tmp_path, prompts, args)
    assert "rates = [0.772442, 0.596667, 0.460891]" in log
    done = verify(run)
    assert done.returncode == 1 and done.stdout.startswith("missed: "), done.stdout
    assert "is not the min-variance schedule [1, 0.830, 0]" in done.stdout
    assert "it matches llama.cpp's geometric schedule [0.772, 0.597, 0.461] for " \
           "--spec-synth-len 2.83 (largest deviation " in done.stdout
    assert "which a bare --spec-synth-len realises and real acceptance at a constant " \
           "per-position rate gives as well; pin --spec-synth-rates 1,0.83,0" in done.stdout
    assert "the mean matches, but the mean alone cannot tell a pinned knob from real " \
           "acceptance near the target" in done.stdout
    from goldenal.measuring.verify import verify as verify_run

    result = verify_run(run, golden)
    assert result.mean_hit is True and result.profile_ok is False
    assert verify_run(run, golden, profile="geometric").hit
    assert goldenal("verify", run, "--target", "2.83", "--k", "3", "--profile",
                    "geometric").returncode == 0


def test_server_without_the_knob_is_real_acceptance(llama_server, tmp_path, prompts):
    run = measure(llama_server.url, tmp_path / "run", prompts, draft="noisy.gguf", requests=5)
    done = verify(run)
    assert done.returncode == 1 and done.stdout.startswith("missed: "), done.stdout
    assert "decays smoothly like real acceptance: the synthetic-acceptance knob was silently " \
           "ignored" in done.stdout
    assert "llama-server started without --spec-synth-len/--spec-synth-rates" in done.stdout


SCRIPT = """#!/usr/bin/env bash
# serve the tiny model with its draft model (llama-server from $PATH)
set -euo pipefail
MODELS=${MODELS:-/models}
PORT=${PORT:-8080}
exec llama-server --model "$MODELS/target.gguf" --host 127.0.0.1 --port "$PORT" --metrics \\
    --spec-type draft-simple --spec-draft-model "$MODELS/draft.gguf" \\
    --spec-draft-n-max 3 --ctx-size 1024 --parallel 1 \\
    --threads 1 --threads-batch 1 --spec-draft-threads 1
"""


def test_inject_then_run_the_script(start_llama, tiny_models, llama_root, tmp_path, prompts):
    script = tmp_path / "serve.sh"
    script.write_text(SCRIPT)
    done = goldenal("inject", script, "--thinking", "on", "--golden-dir", GOLDEN,
                    "--distribution", "min-variance")
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"{script}: changed 1 of 1 entry (llamacpp K=3: 1,0.83,0)\n"
    assert "--spec-draft-n-max 3 --spec-synth-rates 1,0.83,0 --ctx-size 1024" in script.read_text()
    again = goldenal("inject", script, "--thinking", "on", "--golden-dir", GOLDEN, "--check")
    assert again.returncode == 0       # idempotent, and the rates form is kept
    port = free_port()
    env = {**os.environ, "MODELS": str(tiny_models["target"].parent), "PORT": str(port),
           "PATH": f"{llama_root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    server = start_llama(["bash", str(script)], port=port, env=env)
    try:
        run = measure(server.url, tmp_path / "run", prompts)
    finally:
        server.stop()
    done = verify(run)
    assert done.returncode == 0 and done.stdout.startswith("hit: "), done.stdout


def test_a_fixed_server_seed_replays_one_sequence_and_measure_says_so(start_llama, tiny_models,
                                                                      tmp_path, prompts):
    """llama-server --seed 42 and requests without a seed: every request draws the same."""
    server = start_llama(target=tiny_models["target"], draft=tiny_models["draft"], k=K,
                         extra=["--spec-synth-len", "2.83", "--seed", "42"])
    common = ["--model", "goldenal-tiny", "--draft", "draft.gguf", "--k", K, "--thinking", "on",
              "--prompts", prompts, "--requests", 4, "--max-tokens", 100, "--ignore-eos"]
    try:
        replayed = goldenal("measure", server.url, "--out", tmp_path / "replayed", *common)
        seeded = goldenal("measure", server.url, "--out", tmp_path / "seeded", *common,
                          "--seed", 1000)
    finally:
        server.stop()
    assert replayed.returncode == 0, replayed.stderr
    counts = {(r["drafts"], r["draft_tokens"], r["accepted"])
              for r in _records(tmp_path / "replayed")}
    assert len(counts) == 1
    (_, drafted, accepted), = counts
    assert (f"warning: thinking on, K=3: all 4 requests drafted {drafted} tokens and accepted "
            f"{accepted}: one replayed sequence, not independent draws (a llama-server started "
            "with a fixed --seed replays") in replayed.stderr
    # a seed per request (measure --seed) makes them independent draws again
    assert seeded.returncode == 0 and "warning" not in seeded.stderr, seeded.stderr
    assert len({(r["draft_tokens"], r["accepted"])
                for r in _records(tmp_path / "seeded")}) > 1
