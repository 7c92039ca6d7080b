"""`goldenal measure --server-cmd`: one stub server process per K (tests/measure_stub_server.py),
started, waited for, measured and always stopped."""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

import goldenal
from goldenal.core.errors import ConflictError, ServerError, UsageError
from goldenal.measuring.measure import MeasureError
from measure_stub import counts, write_prompts

HERE = os.path.dirname(os.path.abspath(__file__))
STUB = os.path.join(HERE, "measure_stub_server.py")
TEXTS = [f"write a function that returns {i} squared" for i in range(6)]


@pytest.fixture
def prompts(tmp_path):
    return write_prompts(tmp_path / "prompts.jsonl", TEXTS)


def stub_cmd(tmp_path, *extra, k="{k}"):
    return " ".join([shlex.quote(sys.executable), shlex.quote(STUB), "--port", "{port}",
                     "--k", k, "--pid-file", shlex.quote(str(tmp_path / "pids")), *extra])


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is stopped too; only the reaper is missing (it is not our child)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pids(tmp_path):
    path = tmp_path / "pids"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def expected(k):
    rows = [counts(t, k) for t in TEXTS]
    return sum(r[0] for r in rows), sum(r[2] for r in rows)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "goldenal", *args], capture_output=True,
                          text=True, timeout=180)


def test_sweep_k1_to_3_one_server_each_always_stopped(tmp_path, prompts):
    out = tmp_path / "runs" / "tiny"
    result = goldenal.measure_sweep(stub_cmd(tmp_path), out=out, k=[1, 2, 3], model="m",
                                    thinking="off", prompts=prompts, max_tokens=16,
                                    server_timeout=60)
    assert isinstance(result, goldenal.SweepResult)
    assert [c.k for c in result.cells] == [1, 2, 3]
    for cell in result.cells:
        assert (cell.drafts, cell.accepted) == expected(cell.k)
    started = pids(tmp_path)
    assert len(started) == 3 and not any(alive(p) for p in started)
    # the logs are in the run, named by cell, and say what the server printed
    assert [(k, os.path.basename(p)) for k, p in result.server_logs] == [
        (1, "server_off_k1.log"), (2, "server_off_k2.log"), (3, "server_off_k3.log")]
    for k, path in result.server_logs:
        text = open(path).read()
        assert f"stub llamacpp K={k} listening on http://127.0.0.1:" in text
        assert text.endswith("stub: stopped\n")
    run = goldenal.load_run(out)
    assert sorted(run.cells) == [("off", 1), ("off", 2), ("off", 3)]
    # nothing beside the run: the scratch directory of the logs is gone
    assert sorted(os.listdir(tmp_path / "runs")) == ["tiny"]


def test_cli_sweep_text_summary(tmp_path, prompts):
    out = tmp_path / "run"
    p = _cli("measure", "--server-cmd", stub_cmd(tmp_path), "--out", str(out), "--model", "m",
             "--k", "1,2", "--thinking", "off", "--prompts", prompts, "--max-tokens", "16")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 4
    for k, head, stats in ((1, lines[0], lines[1]), (2, lines[2], lines[3])):
        steps, accepted = expected(k)
        assert head == (f"thinking off  K={k}  AL {1 + accepted / steps:.4f}  ({accepted} "
                        f"accepted / {steps} steps)  6 requests, 0 failed  per-request counts")
        tokens = sum(sum(a + 1 for a in __import__("measure_stub").plan(t, k)) for t in TEXTS)
        assert stats.startswith("  p50/p90/p99: latency ")
        assert " s  ttft " in stats and f" tok/s per request; {tokens} tokens in " in stats
    assert not any(alive(p) for p in pids(tmp_path))
    assert sorted(n for n in os.listdir(out) if n.endswith(".log")) == [
        "server_off_k1.log", "server_off_k2.log"]


def test_cli_sweep_json_summary(tmp_path, prompts):
    out = tmp_path / "run"
    p = _cli("measure", "--server-cmd", stub_cmd(tmp_path), "--out", str(out), "--model", "m",
             "--k", "1,2,3", "--thinking", "off", "--prompts", prompts, "--max-tokens", "16",
             "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["run"] == str(out) and doc["engine"] == "llamacpp"
    assert [c["k"] for c in doc["cells"]] == [1, 2, 3]
    for cell in doc["cells"]:
        steps, accepted = expected(cell["k"])
        assert (cell["steps"], cell["accepted"], cell["requests"], cell["failed"]) == (
            steps, accepted, 6, 0)
        assert cell["acceptance_length"] == 1 + accepted / steps
        assert set(cell["latency_s"]) == {"p50", "p90", "p99"}
        assert cell["latency_s"]["p50"] <= cell["latency_s"]["p90"] <= cell["latency_s"]["p99"]
        assert set(cell["tokens_per_s"]) == {"p50", "p90", "p99"}
    assert [(e["k"], os.path.basename(e["path"])) for e in doc["server_logs"]] == [
        (1, "server_off_k1.log"), (2, "server_off_k2.log"), (3, "server_off_k3.log")]


def test_summary_percentiles_are_numpys_linear_ones():
    from goldenal.measuring.measure import CellResult, MeasureResult, RequestRecord, ServerInfo

    reqs = tuple(RequestRecord(i, f"p{i}", "ok", 1, seconds=s, ttft=None,
                               completion_tokens=10)
                 for i, s in enumerate([1.0, 2.0, 3.0, 4.0, 5.0]))
    failed = RequestRecord(5, "p5", "failed", 3, error="x")
    cell = CellResult("off", 3, 10, 30, 15, None, reqs + (failed,), wall_seconds=10.0)
    server = ServerInfo("http://x", "vllm", (), ())
    doc = goldenal.measurement_summary(MeasureResult("run", server, (cell,)))
    c, = doc["cells"]
    assert c["latency_s"] == {"p50": 3.0, "p90": 4.6, "p99": pytest.approx(4.96)}
    assert c["ttft_s"] is None
    # rates 2, 2.5, 3.33, 5, 10 tok/s: p90 at rank 3.6, p99 at 3.96 (linear)
    assert c["tokens_per_s"] == {"p50": 10 / 3, "p90": pytest.approx(8.0),
                                 "p99": pytest.approx(9.8)}
    assert (c["failed"], c["requests"], c["output_tokens"]) == (1, 6, 50)
    assert c["throughput_tokens_per_s"] == 5.0 and c["acceptance_length"] == 2.5


def test_wrong_k_is_refused_after_the_first_request(tmp_path, prompts):
    # the server always runs K=3: the K=2 cell stops after one request
    out = tmp_path / "run"
    with pytest.raises(MeasureError, match=r"K=2: the server drafted 3 positions per step "
                                           r"\(its per-position counters after request 0, "
                                           r"p0\), not K=2") as info:
        # {k} goes into the environment only: the server ignores it
        goldenal.measure_sweep("ASKED_K={k} " + stub_cmd(tmp_path, k="3"), out=out, k=[3, 2],
                               model="m",
                               thinking="off", prompts=prompts, max_tokens=16)
    assert sorted(goldenal.load_run(out).cells) == [("off", 3)]
    assert info.value.server_log == str(out / "server_off_k2.log")
    assert "listening" in (out / "server_off_k2.log").read_text()
    assert not any(alive(p) for p in pids(tmp_path))


def test_a_server_that_exits_is_named_with_its_log(tmp_path, prompts):
    out = tmp_path / "run"
    p = _cli("measure", "--server-cmd", stub_cmd(tmp_path, "--exit", "7"), "--out", str(out),
             "--model", "m", "--k", "1", "--thinking", "off", "--prompts", prompts)
    assert p.returncode == 2 and p.stdout == ""
    log = f"{out}.server_off_k1.log"
    err = p.stderr.splitlines()
    assert err[0] == f"note: the server's log is {log}"
    assert err[1].startswith("error: the server exited (status 7) before it was ready; its "
                             "log ends 'stub: cannot start (exit 7)' (server log: ")
    assert len(err) == 2
    assert open(log).read() == "stub: cannot start (exit 7)\n"
    assert not out.exists()


def test_a_server_never_ready_is_stopped_after_the_timeout(tmp_path, prompts):
    with pytest.raises(ServerError, match=r"not ready within 1.5 s \(http://127.0.0.1:\d+/"
                                          r"health never answered 200\)"):
        goldenal.measure_sweep(stub_cmd(tmp_path, "--no-health"), out=tmp_path / "run", k=1,
                               model="m", thinking="off", prompts=prompts, server_timeout=1.5)
    started = pids(tmp_path)
    assert len(started) == 1 and not alive(started[0])


def test_server_ready_url_is_polled(tmp_path, prompts):
    # /v1/models answers while /health says 503: the given readiness URL decides
    result = goldenal.measure_sweep(stub_cmd(tmp_path, "--no-health"), out=tmp_path / "run",
                                    k=2, model="m", thinking="off", prompts=prompts,
                                    max_tokens=16,
                                    server_ready="http://127.0.0.1:{port}/v1/models")
    assert [c.k for c in result.cells] == [2]


def test_ctrl_c_stops_the_server(tmp_path, prompts):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "goldenal", "measure", "--server-cmd",
         stub_cmd(tmp_path, "--no-health"), "--out", str(out), "--model", "m", "--k", "1",
         "--thinking", "off", "--prompts", prompts],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pids(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and stdout == ""
    assert stderr == (f"interrupted: the cell being measured was not written to {out} (cells "
                      f"finished before it were); server log: {out}.server_off_k1.log\n")
    started = pids(tmp_path)
    assert len(started) == 1 and not alive(started[0])
    assert not out.exists()


def test_a_second_ctrl_c_while_stopping_still_stops_the_server(tmp_path, prompts):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "goldenal", "measure", "--server-cmd",
         stub_cmd(tmp_path, "--no-health", "--stop-delay", "1"), "--out", str(out), "--model",
         "m", "--k", "1", "--thinking", "off", "--prompts", prompts],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pids(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)  # the server takes a second to stop: a second Ctrl-C arrives meanwhile
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    started = pids(tmp_path)
    assert len(started) == 1 and not alive(started[0])
    assert open(f"{out}.server_off_k1.log").read().endswith("stub: stopped\n")


def test_sigterm_stops_the_server(tmp_path, prompts):
    proc = subprocess.Popen(
        [sys.executable, "-m", "goldenal", "measure", "--server-cmd",
         stub_cmd(tmp_path, "--no-health"), "--out", str(tmp_path / "run"), "--model", "m",
         "--k", "1", "--thinking", "off", "--prompts", prompts],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pids(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.terminate()
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert not any(alive(p) for p in pids(tmp_path))


def test_existing_cell_is_refused_before_any_server_starts(tmp_path, prompts):
    out = tmp_path / "run"
    goldenal.measure_sweep(stub_cmd(tmp_path), out=out, k=1, model="m", thinking="off",
                           prompts=prompts, max_tokens=16)
    (tmp_path / "pids").unlink()
    with pytest.raises(ConflictError, match="already has the cell thinking off, K=1"):
        goldenal.measure_sweep(stub_cmd(tmp_path), out=out, k=[2, 1], model="m",
                               thinking="off", prompts=prompts, max_tokens=16)
    assert pids(tmp_path) == []


@pytest.mark.parametrize("cmd, kwargs, message", [
    ("stub --port {port}", {"k": [1, 2]}, "where the command takes K)"),
    # the engine a command starts says how it takes K (its record's K flag)
    ("/opt/llama-server -m t.gguf --port {port}", {"k": [1, 2]},
     "where the command takes K, e.g. --spec-draft-n-max {k})"),
    ("stub --k {k}", {"k": [1, 2]}, "give the URL the server answers at"),
    ("stub --k {k} --port {port}", {"k": [1, 2], "url": "http://127.0.0.1:8080"},
     "takes {port} but the URL has none"),
    ("stub --k {k} --port {port}", {"k": [1, 1]}, "each K once"),
    ("  ", {"k": 1}, "`server_cmd` must be the command line"),
    ("stub --k {k} --port {port}", {"k": 1, "server_timeout": 0}, "`server_timeout`"),
    ("stub --k {k} --port {port}", {"k": 1, "concurrency": 0}, "`concurrency`"),
    # regressions: these were refused only once the first server had started
    ("stub --k {k} --port {port}", {"k": 1, "not_golden": " "}, "`not_golden` must be"),
    ("stub --k {k} --port {port}", {"k": 1, "seed": "7"}, "`seed` must be an integer"),
    ("stub --k {k} --port {port}", {"k": 1, "curve": "../x"}, "../x"),
])
def test_sweep_arguments_are_checked_before_any_server_starts(tmp_path, prompts, cmd, kwargs,
                                                               message):
    with pytest.raises(UsageError, match=re_escape(message)):
        goldenal.measure_sweep(cmd, out=tmp_path / "run", model="m", thinking="off",
                               prompts=prompts, **kwargs)
    assert not (tmp_path / "run").exists()


def re_escape(text):
    import re

    return re.escape(text)


def test_cli_needs_a_url_or_a_server_command(tmp_path, prompts):
    p = _cli("measure", "--out", str(tmp_path / "run"), "--model", "m", "--k", "1",
             "--thinking", "off", "--prompts", prompts)
    assert p.returncode == 2
    assert p.stderr == "error: give the server's URL, or --server-cmd to start one per K\n"


def test_cli_json_summary_against_a_running_server(tmp_path, prompts):
    from measure_stub import StubServer

    stub = StubServer("vllm", k=2)
    try:
        p = _cli("measure", stub.url, "--out", str(tmp_path / "run"), "--model", "m", "--k", "2",
                 "--thinking", "off", "--prompts", prompts, "--format", "json")
    finally:
        stub.stop()
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    (cell,) = doc["cells"]
    assert (cell["k"], cell["steps"], cell["accepted"]) == (2, *expected(2))
    assert doc["engine"] == "vllm" and "server_logs" not in doc


def test_fill_leaves_other_braces_and_log_tail_is_bounded(tmp_path):
    from goldenal.measuring.servers import fill, log_tail

    assert fill("""vllm serve m --speculative-config '{"num_speculative_tokens": {k}}' """
                "--port {port}", k=3, port=81) == (
        """vllm serve m --speculative-config '{"num_speculative_tokens": 3}' --port 81""")
    log = tmp_path / "log"
    log.write_bytes(b"x" * 10_000 + b"\nsecond to last\nlast line\n")
    assert log_tail(log, limit=30) == "second to last\nlast line"
    assert log_tail(tmp_path / "missing") == ""
