"""Pinning llama.cpp's synthetic acceptance on a real ``llama-server``, and verifying it.

The golden cell is the test curve ``tiny_draft`` (tests/data/golden-tiny/: AL
1.70, 2.35, 2.83, 3.20 at K=1..4, thinking on); K=3 throughout, so the cell
is 2.83, the curve's per-position profile is [0.7, 0.65, 0.48] and the
minimum-variance schedule [1, 0.83, 0].  Each test starts its own server with
the knob as a user would write it (``goldenal emit`` / ``goldenal inject``),
sends a few greedy completions between two ``/metrics`` scrapes and runs
``goldenal verify`` on the run directory, as a user does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .llama_server import free_port
from .workload import measure_run, response_totals

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden-tiny"
CELL = ["--k", "3", "--thinking", "on", "--golden-dir", str(GOLDEN)]
IDENTITY = {"model": "goldenal-tiny", "draft": ["draft.gguf"], "method": "draft-simple",
            "engine": {"name": "llamacpp"}, "simulated": True}
K = 3


def goldenal(*args):
    script = shutil.which("goldenal", path=os.path.dirname(sys.executable))
    cmd = [script] if script else [sys.executable, "-m", "goldenal"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                          timeout=300)


def emit(*extra):
    done = goldenal("emit", "goldenal-tiny", *CELL, "--engine", "llamacpp", "--format", "args",
                    *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout.split(), done.stderr


def verify(run, *extra):
    return goldenal("verify", run, "--model", "goldenal-tiny", *CELL, *extra)


@pytest.fixture(scope="module")
def golden():
    from goldenal.api import lookup

    value = lookup("goldenal-tiny", k=3, thinking="on", golden_dir=str(GOLDEN))
    assert value.text == "2.83"
    return value


def _run(start_llama, tiny_models, tmp_path, extra=(), draft="draft"):
    server = start_llama(target=tiny_models["target"], draft=tiny_models[draft], k=K,
                         extra=extra)
    try:
        run = measure_run(server.url, tmp_path / "run", k=K, identity=IDENTITY)
    finally:
        server.stop()
    return run, server.log.read_text(errors="replace")


def _counts(run):
    from goldenal.readers import load_run

    (obs,) = load_run(run).observations()
    return obs


def test_distribution_pin_realises_the_curve_profile(start_llama, tiny_models, tmp_path,
                                                     golden):
    args, note = emit("--distribution")
    assert (args, note) == (["--spec-synth-rates", "0.7,0.65,0.48"], "")
    run, log = _run(start_llama, tiny_models, tmp_path, args)
    # the server states the schedule it draws from (common/speculative.cpp)
    assert "synthetic acceptance: n_max = 3, mean length = 2.830000, rates = [0.7, 0.65, 0.48]" \
        in log
    done = verify(run, "--profile", "curve")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("hit: realized AL 2.")
    assert done.stdout.rstrip().endswith("per-position profile matches the expected profile")
    from goldenal.verification import verify as verify_run

    result = verify_run(run, golden, profile=[0.7, 0.65, 0.48])
    assert result.hit and result.mean_hit and result.profile_ok and result.engine == "llamacpp"
    # the window is the server's own counters, and agrees with its per-response timings
    obs = _counts(run)
    drafted, accepted = response_totals(run)
    assert (obs.draft_tokens, obs.accepted) == (drafted, accepted)
    assert result.realized_al == 1 + obs.accepted / obs.drafts
    assert sum(obs.accepted_per_position) == obs.accepted and result.steps == obs.drafts > 1000


def test_min_variance_rates_pass_the_default_verify(start_llama, tiny_models, tmp_path):
    args, _ = emit("--distribution", "min-variance")
    assert args == ["--spec-synth-rates", "1,0.83,0"]
    run, _ = _run(start_llama, tiny_models, tmp_path, args)
    done = verify(run)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("per-position profile matches the min-variance schedule")
    obs = _counts(run)
    # exactly the schedule's support: every step accepts one or two drafts, never three
    assert obs.accepted_per_position[0] == obs.drafts and obs.accepted_per_position[2] == 0


def test_bare_length_hits_the_mean_on_another_schedule(start_llama, tiny_models, tmp_path,
                                                       golden):
    args, note = emit()
    assert args == ["--spec-synth-len", "2.83"]
    assert note.startswith("note: llama.cpp realises --spec-synth-len 2.83 at K=3 as a "
                           "geometric schedule (survival [0.772, 0.597, 0.461])")
    run, log = _run(start_llama, tiny_models, tmp_path, args)
    assert "rates = [0.772442, 0.596667, 0.460891]" in log
    done = verify(run)
    assert done.returncode == 1 and done.stdout.startswith("missed: "), done.stdout
    assert "is not the min-variance schedule [1, 0.830, 0]" in done.stdout
    assert "it is llama.cpp's geometric schedule [0.772, 0.597, 0.461] for --spec-synth-len " \
           "2.83; pin --spec-synth-rates 1,0.83,0" in done.stdout
    assert "the mean matches but the per-step distribution does not" in done.stdout
    from goldenal.verification import verify as verify_run

    result = verify_run(run, golden)
    assert result.mean_hit is True and result.profile_ok is False
    assert verify_run(run, golden, profile="geometric").hit
    assert goldenal("verify", run, "--target", "2.83", "--k", "3", "--profile",
                    "geometric").returncode == 0


def test_server_without_the_knob_is_real_acceptance(llama_server, tmp_path):
    run = measure_run(llama_server.url, tmp_path / "run", k=K, requests=5,
                      identity={**IDENTITY, "draft": ["noisy.gguf"], "simulated": False})
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


def test_inject_then_run_the_script(start_llama, tiny_models, llama_root, tmp_path):
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
        run = measure_run(server.url, tmp_path / "run", k=K, identity=IDENTITY)
    finally:
        server.stop()
    done = verify(run)
    assert done.returncode == 0 and done.stdout.startswith("hit: "), done.stdout
