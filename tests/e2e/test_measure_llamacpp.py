"""``goldenal measure`` then ``goldenal fit`` on real speculative decoding (llama-server).

The server runs the tiny target with the perturbed draft (real acceptance,
K=3).  The test reads the server's own ``/metrics`` before and after with a
plain regular expression (not goldenal's reader) and its own per-task log
lines, and checks that what ``measure`` recorded and ``fit`` committed is
exactly what the server counted: AL = 1 + accepted / steps, the steps and the
accepted drafts per position, with a request-bootstrap interval around it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import httpx

K = 3
PROMPTS = ("def fibonacci(n):", "// parse a CSV line in C\n", "SELECT name FROM users WHERE",
           "#!/bin/sh\n# back up the home directory\n", "class Stack:\n    def push(self, x):",
           "fn main() {", "<html><head><title>", "import numpy as np\n", "struct list {",
           "async function fetchUser(id) {", "-- migrate the orders table\n", "package main\n")
COUNTER = re.compile(r"^llamacpp:spec_decode_(num_drafts|num_accepted_tokens|num_draft_tokens)"
                     r"_total (\S+)$", re.M)
PER_POS = re.compile(r'^llamacpp:spec_decode_num_accepted_tokens_per_pos_total\{position="(\d+)"\}'
                     r" (\S+)$", re.M)
# tools/server/server-context.cpp print_timings: one line per task at its end
TASK_LINE = re.compile(r"draft acceptance = [0-9.]+ \(\s*(\d+) accepted /\s*(\d+) generated\), "
                       r"mean len =\s*([0-9.]+)")


def goldenal(*args):
    script = shutil.which("goldenal", path=os.path.dirname(sys.executable))
    cmd = [script] if script else [sys.executable, "-m", "goldenal"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                          timeout=600)


def server_counts(url):
    """The server's counters, read naively: {name: int}, {position: int}."""
    text = httpx.get(url + "/metrics", timeout=30).text
    totals = {name: int(float(v)) for name, v in COUNTER.findall(text)}
    per_pos = {int(i): int(float(v)) for i, v in PER_POS.findall(text)}
    return totals, per_pos


def test_measure_then_fit_gives_the_servers_own_al_per_position(llama_server, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n"
                               for i, p in enumerate(PROMPTS)))
    before, pos_before = server_counts(llama_server.url)
    log_start = len(llama_server.log.read_text(errors="replace"))
    run = tmp_path / "tiny-llamacpp"
    done = goldenal("measure", llama_server.url, "--out", run, "--model", "goldenal-tiny",
                    "--draft", "noisy.gguf", "--method", "draft-simple", "--curve-id",
                    "goldenal_tiny_noisy", "--k", K, "--thinking", "off", "--prompts", prompts,
                    "--max-tokens", "120", "--ignore-eos", "--seed", "1000")
    assert done.returncode == 0, done.stderr
    after, pos_after = server_counts(llama_server.url)
    steps = after["num_drafts"] - before["num_drafts"]
    accepted = after["num_accepted_tokens"] - before["num_accepted_tokens"]
    per_pos = [pos_after[i] - pos_before.get(i, 0) for i in range(K)]
    assert steps > 0 and 0 < accepted < K * steps and sum(per_pos) == accepted
    assert f"AL {1 + accepted / steps:.4f}  ({accepted} accepted / {steps} steps)  " \
           f"{len(PROMPTS)} requests, 0 failed  per-request counts" in done.stdout

    # every request's counts are the server's own per-task statistics
    records = [json.loads(line) for line in (run / "requests_off_k3.jsonl").read_text()
               .splitlines()]
    tasks = TASK_LINE.findall(llama_server.log.read_text(errors="replace")[log_start:])
    assert len(records) == len(tasks) == len(PROMPTS)
    for record, (task_accepted, task_drafted, mean_len) in zip(records, tasks):
        assert record["accepted"] == int(task_accepted) == record["timings"]["draft_n_accepted"]
        assert record["draft_tokens"] == int(task_drafted) == record["timings"]["draft_n"]
        assert f"{1 + record['accepted'] / record['drafts']:5.2f}".strip() == mean_len

    golden = tmp_path / "golden"
    fit = goldenal("fit", run, "--golden-dir", golden, "--seed", "1", "--format", "json")
    assert fit.returncode == 0, fit.stderr
    (cell,) = json.loads(fit.stdout)["cells"]
    assert (cell["k"], cell["n_steps"]) == (K, steps)
    assert cell["estimate"] == 1 + accepted / steps
    assert cell["value"] == f"{1 + accepted / steps:.2f}"
    low, high = cell["interval"]["low"], cell["interval"]["high"]
    assert cell["interval"]["method"] == "bootstrap" and low < cell["estimate"] < high
    dist = json.loads((golden / "goldenal_tiny_noisy.distribution.json").read_text())
    (stored,) = dist["cells"]
    assert (stored["accepted"], stored["n_clusters"]) == (accepted, len(PROMPTS))
    positions = stored["per_position"]
    assert positions["accepted_per_position"] == per_pos
    assert positions["survival"] == [round(c / steps, 6) for c in per_pos]
    lows, highs = positions["survival_interval"]
    for lo, s, hi in zip(lows, positions["survival"], highs):
        assert lo <= s <= hi and lo < hi


def _server_cmd(llama_root, tiny_models, k="{k}"):
    """The llama-server command line ``measure --server-cmd`` takes ({port}, {k} left open)."""
    import shlex

    from .llama_build import server_binary
    from .llama_server import base_args

    argv = base_args(llama_root, tiny_models["target"], port=0, draft=tiny_models["noisy"])
    argv[argv.index("--port") + 1] = "{port}"
    argv[argv.index("--spec-draft-n-max") + 1] = k
    lib = shlex.quote(str(server_binary(llama_root).parent))
    return f"LD_LIBRARY_PATH={lib} " + " ".join(
        a if a in ("{port}", "{k}") else shlex.quote(str(a)) for a in argv)


def test_measure_starts_one_server_per_k_and_stops_each(llama_root, tiny_models, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n"
                               for i, p in enumerate(PROMPTS[:4])))
    run = tmp_path / "sweep"
    done = goldenal("measure", "--server-cmd", _server_cmd(llama_root, tiny_models),
                    "--k", "1,2", "--out", run, "--model", "goldenal-tiny", "--draft",
                    "noisy.gguf", "--thinking", "off", "--prompts", prompts,
                    "--max-tokens", "64", "--ignore-eos", "--seed", "1000", "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [c["k"] for c in doc["cells"]] == [1, 2]
    for cell in doc["cells"]:
        k = cell["k"]
        log = (run / f"server_off_k{k}.log").read_text(errors="replace")
        # the counts are the server's own per-task statistics, from its own log
        tasks = TASK_LINE.findall(log)
        assert len(tasks) == cell["requests"] == 4 and cell["failed"] == 0
        assert sum(int(a) for a, _, _ in tasks) == cell["accepted"]
        # and the server was stopped as llama-server stops on SIGTERM
        assert "cleaning up before exit" in log
        assert cell["output_tokens"] == 4 * 64
    assert [os.path.basename(e["path"]) for e in doc["server_logs"]] == [
        "server_off_k1.log", "server_off_k2.log"]


def test_a_server_of_another_k_is_refused_after_its_first_request(llama_root, tiny_models,
                                                                   tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n"
                               for i, p in enumerate(PROMPTS)))
    run = tmp_path / "wrong-k"
    # {k} only in the environment: the server always drafts 3
    done = goldenal("measure", "--server-cmd",
                    "ASKED_K={k} " + _server_cmd(llama_root, tiny_models, k="3"),
                    "--k", "2", "--out", run, "--model", "goldenal-tiny", "--thinking", "off",
                    "--prompts", prompts, "--max-tokens", "64", "--ignore-eos")
    assert done.returncode == 1
    assert ("K=2: the server drafted 3 positions per step (its per-position counters after "
            "request 0, p0), not K=2; nothing written") in done.stderr
    log = (tmp_path / "wrong-k.server_off_k2.log").read_text(errors="replace")
    assert len(TASK_LINE.findall(log)) == 1  # one request, not the whole workload
    assert not run.exists()
