"""``goldenal measure`` against a misbehaving server (tests/hostile/hostile_server.py).

Each mode spoils one answer; the CLI runs as a user runs it, in a process
whose address space is capped (RLIMIT_AS) and whose run time is bounded (a
hang fails the test through the subprocess timeout), and must end with its
documented exit code, one line on stderr naming the URL and the cap, and
nothing written.
"""

import json
import os
import resource
import subprocess
import sys

import pytest

from hostile.hostile_server import HostileServer

MEMORY_CAP = 1 << 30     # far below what an endless body grows to; above a normal run


def _capped():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@pytest.fixture
def prompts(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"question {i}"}) + "\n"
                            for i in range(3)))
    return path


def measure(url, out, prompts, *extra):
    proc = subprocess.run([sys.executable, "-m", "goldenal", "measure", url, "--out", str(out),
                           "--model", "m", "--k", "3", "--thinking", "off", "--prompts",
                           str(prompts), "--timeout", "2", "--retries", "1", *extra],
                          capture_output=True, text=True, timeout=120, preexec_fn=_capped)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def hostile(request):
    server = HostileServer(request.param)
    try:
        yield server
    finally:
        server.stop()


LIMITS = [
    ("metrics-endless", "/metrics: the answer is longer than the cap of 64 MiB"),
    ("metrics-drip", "/metrics: no whole answer within 2 s (the deadline of one GET)"),
    ("metrics-many-series", "/metrics: 30000 speculative-decoding samples, past the cap of "
                            "20000"),
    ("metrics-gzip", "/metrics: the answer is compressed (Content-Encoding 'gzip'), though "
                     "measure asks for identity"),
    ("models-deep", "/v1/models: JSON nested deeper than 64 levels (the cap)"),
    ("models-declared-huge", "/v1/models: the answer is 1073741824 bytes, past the cap of "
                             "16 MiB"),
    ("version-deep", "/version: JSON nested deeper than 64 levels (the cap)"),
    ("sse-endless-line", "/v1/chat/completions: a line of the stream is longer than the cap "
                         "of 1 MiB"),
    ("sse-deep-event", "/v1/chat/completions (an event of the stream): JSON nested deeper "
                       "than 64 levels (the cap)"),
]


@pytest.mark.parametrize("hostile, message", LIMITS, indirect=["hostile"],
                         ids=[mode for mode, _ in LIMITS])
def test_an_answer_past_a_cap_stops_the_run_with_exit_2(hostile, message, prompts, tmp_path):
    code, out, err = measure(hostile.url, tmp_path / "run", prompts)
    assert (code, out, err) == (2, "", f"error: {hostile.url}{message}\n")
    assert sorted(os.listdir(tmp_path)) == ["prompts.jsonl"]


IMPOSSIBLE = [
    ("metrics-huge-counts", "thinking off, K=3: impossible counts from {url}/metrics: steps "
                            f"{10 ** 30} is outside 0..2^63-1; nothing written for this cell"),
    ("counts-impossible", "thinking off, K=3, request 0 (p0): impossible counts from engine "
                          "per-request metrics: 1000000 accepted in 10 steps is more than K=3 "
                          "per step; nothing written for this cell"),
    ("counts-increasing", "thinking off, K=3, request 0 (p0): impossible counts from engine "
                          "per-request metrics: per-position counts [5, 8, 5] increase; "
                          "nothing written for this cell"),
]


@pytest.mark.parametrize("hostile, message", IMPOSSIBLE, indirect=["hostile"],
                         ids=[mode for mode, _ in IMPOSSIBLE])
def test_impossible_counts_refuse_the_cell_with_exit_1(hostile, message, prompts, tmp_path):
    code, out, err = measure(hostile.url, tmp_path / "run", prompts)
    # float(10**30) as the exposition prints it, read back as an integer
    message = message.format(url=hostile.url).replace(str(10 ** 30), str(int(float(10 ** 30))))
    assert (code, out, err) == (1, "", f"error: {message}\n")
    assert sorted(os.listdir(tmp_path)) == ["prompts.jsonl"]


@pytest.mark.parametrize("hostile", ["retry-after-superscript"], indirect=True)
def test_a_non_ascii_retry_after_is_no_crash(hostile, prompts, tmp_path):
    code, out, err = measure(hostile.url, tmp_path / "run", prompts)
    assert code == 0, err
    assert out.startswith("thinking off  K=3  AL 3.0000  (60 accepted / 30 steps)  3 requests")
    records = (tmp_path / "run" / "requests_off_k3.jsonl").read_text().splitlines()
    assert [json.loads(r)["attempts"] for r in records] == [2, 1, 1]


@pytest.mark.parametrize("hostile", ["contradiction"], indirect=True)
def test_a_server_contradicting_itself_is_never_a_golden_value(hostile, prompts, tmp_path):
    import yaml

    code, out, err = measure(hostile.url, tmp_path / "run", prompts)
    message = ("the server contradicts itself: accepted tokens 87 by its per-request counts "
               "(engine per-request metrics), 60 by its /metrics counters (beyond a counting "
               "noise of 1)")
    assert (code, out) == (1, "")
    assert err == (f"error: thinking off, K=3: {message}; the cell is recorded as inconsistent "
                   f"in {tmp_path / 'run' / 'run.yaml'} (fit --golden-dir refuses it): measure it "
                   "again with --replace\n")
    cell, = yaml.safe_load((tmp_path / "run" / "run.yaml").read_text())["cells"]
    assert cell["inconsistent"] == message
    fit = subprocess.run([sys.executable, "-m", "goldenal", "fit", str(tmp_path / "run"),
                          "--out", str(tmp_path / "golden"), "--curve-id", "c1"],
                         capture_output=True, text=True, timeout=120)
    assert (fit.returncode, fit.stdout) == (1, "")
    assert fit.stderr.endswith(
        f"error: {tmp_path / 'run'}: 1 cell(s) marked inconsistent in run.yaml (the server's "
        f"per-request counts and its counters disagree): thinking off, K=3: {message}; "
        "measure the cell again (measure --replace)\n")
    assert not (tmp_path / "golden").exists()


@pytest.mark.parametrize("hostile", ["normal"], indirect=True)
def test_credentials_are_sent_and_never_written(hostile, prompts, tmp_path):
    url = hostile.url.replace("http://", "http://alice:s3cret@") + "/v1?token=t0ken"
    code, _, err = measure(url, tmp_path / "run", prompts)
    assert code == 0, err
    # the server got them: basic auth from the user info, the query on every request
    assert hostile.headers_seen[0]["authorization"] == "Basic YWxpY2U6czNjcmV0"
    assert all(path.endswith("?token=t0ken") for path in hostile.paths_seen)
    for name in os.listdir(tmp_path / "run"):
        text = (tmp_path / "run" / name).read_text()
        assert not any(secret in text for secret in ("alice", "s3cret", "t0ken")), name
    assert "s3cret" not in err and "t0ken" not in err
    import yaml

    doc = yaml.safe_load((tmp_path / "run" / "run.yaml").read_text())
    assert doc["measure"]["url"] == hostile.url + "/v1"
    served = json.loads((tmp_path / "run" / "server_off_k3.json").read_text())
    assert served["url"] == hostile.url


def test_credentials_are_not_in_error_messages(prompts, tmp_path):
    server = HostileServer("normal")
    url = server.url.replace("http://", "http://alice:s3cret@") + "/?token=t0ken"
    server.stop()
    code, out, err = measure(url, tmp_path / "run", prompts)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: cannot reach {server.url}: ")
    assert not any(secret in err for secret in ("alice", "s3cret", "t0ken"))


@pytest.mark.parametrize("flag, value, message", [
    ("--curve-id", "../escape", "curve id '../escape' is not allowed"),
    ("--model", "x: y", "--model 'x: y' does not read back unchanged from a golden curve file"),
    ("--model", "a\nb", "--model 'a\\nb' does not read back unchanged"),
    ("--draft", "a\nb", "--draft ['a\\nb'] does not read back unchanged"),
])
def test_identity_fit_would_refuse_is_refused_before_any_request(prompts, tmp_path, flag,
                                                                 value, message):
    server = HostileServer("normal")
    try:
        argv = ["--model", "m", flag, value] if flag != "--model" else [flag, value]
        proc = subprocess.run([sys.executable, "-m", "goldenal", "measure", server.url,
                               "--out", str(tmp_path / "run"), "--k", "3", "--thinking",
                               "off", "--prompts", str(prompts), *argv],
                              capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"error: {message}") and proc.stderr.count("\n") == 1
    assert server.paths_seen == []
    assert sorted(os.listdir(tmp_path)) == ["prompts.jsonl"]


def test_a_run_name_fit_would_refuse_is_refused_before_any_request(prompts, tmp_path):
    server = HostileServer("normal")
    try:
        proc = subprocess.run([sys.executable, "-m", "goldenal", "measure", server.url,
                               "--out", str(tmp_path / "bad\nname"), "--model", "m", "--k",
                               "3", "--thinking", "off", "--prompts", str(prompts)],
                              capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --out (its last part names the run) 'bad\\nname' "
                                  "does not read back unchanged")
    assert server.paths_seen == []


@pytest.mark.parametrize("hostile", ["sse-drip"], indirect=True)
def test_a_dripping_stream_is_cut_at_the_request_deadline(hostile, prompts, tmp_path):
    # a byte every 0.2 s never trips a per-read timeout: --timeout bounds the request in
    # all, which is retried (--retries 1), then recorded as failed
    code, out, err = measure(hostile.url, tmp_path / "run", prompts, "--requests", "1")
    assert (code, out) == (1, "")
    assert err == ("error: thinking off, K=3: every request failed (failed after 2 "
                   "attempt(s): timed out after 2 s); nothing written for this cell\n")
    assert sorted(os.listdir(tmp_path)) == ["prompts.jsonl"]


@pytest.mark.parametrize("url, message", [
    ("http://u:s3cret@[::1", "`url` 'http://[::1' is not a valid URL: Invalid IPv6 URL"),
    ("http://u:s3cret@127.0.0.1:99999/?t=s3cret",
     "`url` 'http://127.0.0.1:99999/' is not a valid URL: Port out of range 0-65535"),
])
def test_a_malformed_url_is_a_usage_error_without_its_secrets(url, message, prompts,
                                                               tmp_path):
    code, out, err = measure(url, tmp_path / "run", prompts)
    assert (code, out, err) == (2, "", f"error: {message}\n")
