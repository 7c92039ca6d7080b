"""`goldenal ingest` as a user runs it: stdout, stderr, exit code."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goldenal.cli import main

DATA = Path(__file__).parent / "data" / "ingest"


@pytest.fixture
def in_data(monkeypatch):
    monkeypatch.chdir(DATA)


def test_table_prints_the_summary_first_and_counts_the_windows(capsys, in_data):
    assert main(["ingest", "vllm_v1_43295.log"]) == 0
    out, err = capsys.readouterr()
    assert out == (
        "cell vllm_v1_43295.log K=2: AL 2.6521 pooled over 7234 steps, 2 window(s)\n"
        "2 windows from 1 file; --windows lists each\n")
    assert err == ""


def test_windows_lists_every_window_after_the_summary(capsys, in_data):
    assert main(["ingest", "vllm_v1_43295.log", "--windows"]) == 0
    out, err = capsys.readouterr()
    assert out == (
        "cell vllm_v1_43295.log K=2: AL 2.6521 pooled over 7234 steps, 2 window(s)\n"
        "\n"
        "source             line  format       k  drafts  draft_tok  accepted  per_position  "
        "mean_al  al\n"
        "vllm_v1_43295.log  3     vllm-log-v1  2  3607    7214       5533      3001,2532     "
        "2.53     2.534\n"
        "vllm_v1_43295.log  5     vllm-log-v1  2  3627    7254       6418      3370,3048     "
        "2.77     2.7695\n")
    assert err == ""


def test_csv_and_jsonl_stream_rows_whatever_windows_says(capsys, in_data):
    assert main(["ingest", "vllm_v1_43295.log", "--format", "jsonl", "--windows"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["line"] for line in out.splitlines()] == [3, 5]
    assert err == "cell vllm_v1_43295.log K=2: AL 2.6521 pooled over 7234 steps, 2 window(s)\n"


def test_jsonl_keys_and_summary_on_stderr(capsys, in_data):
    assert main(["ingest", "prom_dp2_k3_before.prom", "prom_dp2_k3_after.prom",
                 "--format", "jsonl"]) == 0
    out, err = capsys.readouterr()
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert record == {"source": "prom_dp2_k3_after.prom", "line": None, "engine": "vllm",
                      "format": "vllm-prometheus", "k": 3, "drafts": 20000,
                      "draft_tokens": 60000, "accepted": 36600,
                      "accepted_per_position": [20000, 16600, 0], "mean_al": None}
    assert err == "cell prom_dp2_k3_after.prom K=3: AL 2.8300 pooled over 20000 steps, " \
                  "1 window(s)\n"


def test_csv(capsys, in_data):
    assert main(["ingest", "sglang_decode_11948.log", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == ("source,line,engine,format,k,drafts,draft_tokens,accepted,"
                        "accepted_per_position,mean_al")
    assert lines[1] == "sglang_decode_11948.log,3,sglang,sglang-log,,,,,,2.17"
    assert err == ("cell sglang_decode_11948.log K=?: mean-only, 5 window(s); unweighted "
                   "mean of printed means 1.9540 (no step counts: not a pooled AL)\n")


def test_partial_results_exit_1_and_say_so(capsys, in_data):
    assert main(["ingest", "bad/truncated_last_line.log", "--format", "jsonl"]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    assert err.splitlines() == [
        "cell truncated_last_line.log K=5: AL 2.9094 pooled over 331 steps, 1 window(s)",
        "refused: bad/truncated_last_line.log:4: truncated last line (no newline, fields "
        "missing)",
        "incomplete: 1 window(s) refused; the totals above are partial"]


def test_run_directory(capsys, in_data):
    assert main(["ingest", "run_manifest"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "cell thinking off K=5: AL 2.7859 pooled over 668 steps, 2 window(s)",
        "cell thinking on K=3: AL 2.8300 pooled over 20000 steps, 1 window(s)",
        "3 windows from 2 files; --windows lists each"]
    assert err.splitlines()[0] == ("warning: run_manifest/server_off_k5.log:3: server started "
                                   "with method 'mtp', the run says 'eagle3'")


def test_unreadable_exit_2(capsys, in_data):
    assert main(["ingest", "nope.log"]) == 2
    assert capsys.readouterr().err == "error: nope.log: no such file\n"


def test_nothing_measured_exit_2(capsys, in_data):
    assert main(["ingest", "vllm_v1_nan_15958.log"]) == 2
    assert capsys.readouterr().err == (
        "error: vllm_v1_nan_15958.log: no speculative-decoding measurements found in this "
        "file (2 metrics line(s) with zero drafts skipped: speculation off?)\n")


def test_subprocess_help_and_run():
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1]))
    res = subprocess.run([sys.executable, "-m", "goldenal", "ingest", "--help"],
                         capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0 and "goldenal ingest server_on_mtp3.log" in res.stdout
    res = subprocess.run([sys.executable, "-m", "goldenal", "ingest",
                          str(DATA / "atom_interval_560.log"), "--format", "jsonl"],
                         capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0
    assert [json.loads(x)["accepted"] for x in res.stdout.splitlines()] == [727, 703, 729]


def test_import_is_light():
    code = ("import sys, goldenal.readers, goldenal.readers.vllm_log, goldenal.readers.run; "
            "print(any(m in sys.modules for m in ('pandas', 'scipy')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert res.stdout.strip() == "False"
