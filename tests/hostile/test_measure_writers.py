"""One run directory, one writer: concurrent ``measure`` processes lose no cell.

``measure`` reads ``run.yaml`` when it starts and adds its cell at the end of
the cell.  Two processes adding cells to one run used to both exit 0 with one
cell missing (each wrote the run.yaml it had read, plus its own cell).  Now
the read-modify-write of run.yaml holds the run's lock and reads run.yaml
again under it.  Here two ``goldenal measure`` processes, as a user runs them,
measure two cells of one run at the same time, round after round (with
``--replace``, with another ``--max-tokens`` each round, recorded per thinking
mode: a lost update shows as a missing cell or a stale value), against two
stub servers on 127.0.0.1.
"""

import os
import signal
import subprocess
import time

import pytest
import yaml

import goldenal
from conftest import goldenal_cmd
from goldenal.core import files as _files
from goldenal.core.errors import ConflictError
from hostile.hostile_support import snapshot
from measure_stub import StubServer, write_prompts

TEXTS = [f"write a function that returns {i} squared" for i in range(6)]
ROUNDS = 3


@pytest.fixture
def prompts(tmp_path):
    return write_prompts(tmp_path / "prompts.jsonl", TEXTS)


@pytest.fixture
def servers():
    stubs = [StubServer("llamacpp", k=3), StubServer("llamacpp", k=3)]
    try:
        for stub in stubs:
            stub.delay = 0.01      # a cell lasts long enough for the two to overlap
        yield stubs
    finally:
        for stub in stubs:
            stub.stop()


def _measure(url, out, prompts, thinking, max_tokens, *extra):
    return subprocess.Popen(
        [*goldenal_cmd(), "measure", url, "--out", str(out), "--model", "tiny-llama",
         "--draft", "tiny-llama-draft", "--k", "3", "--thinking", thinking, "--prompts",
         prompts, "--max-tokens", str(max_tokens), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _cells(out):
    """``{(thinking, k): max_tokens}`` of the cells run.yaml lists."""
    doc = yaml.safe_load((out / "run.yaml").read_text())
    return {(c["thinking"], c["k"]): doc["sampling"][f"thinking_{c['thinking']}"]["max_tokens"]
            for c in doc["cells"]}


def test_two_measures_adding_cells_at_once_keep_both(servers, prompts, tmp_path):
    out = tmp_path / "run"
    for r in range(ROUNDS):
        replace = ("--replace",) if r else ()
        procs = [_measure(servers[0].url, out, prompts, "off", 64 + r, *replace),
                 _measure(servers[1].url, out, prompts, "on", 80 + r, *replace)]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        # no cell lost, none stale: each holds this round's settings
        assert _cells(out) == {("off", 3): 64 + r, ("on", 3): 80 + r}, r
        run = goldenal.load_run(out)
        assert len(run.summary().cells) == 2 and run.complete
        assert sorted(os.listdir(out)) == sorted(
            ["run.yaml"] + [f"{kind}_{t}_k3{suffix}" for t in ("off", "on")
                            for kind, suffix in (("metrics", "_before.prom"),
                                                 ("metrics", "_after.prom"),
                                                 ("requests", ".jsonl"), ("server", ".json"))])


def test_the_same_new_cell_measured_twice_at_once_is_refused_once(servers, prompts, tmp_path):
    """Without --replace the second commit finds the cell the first one added: exit 3."""
    out = tmp_path / "run"
    procs = [_measure(servers[0].url, out, prompts, "off", 64),
             _measure(servers[1].url, out, prompts, "off", 64)]
    results = []
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        results.append((proc.returncode, err))
    codes = sorted(code for code, _ in results)
    assert codes in ([0, 3], [0, 0]), results
    if codes == [0, 3]:
        err = next(e for c, e in results if c == 3)
        assert err.strip().splitlines()[-1].endswith(
            "run.yaml already has the cell thinking off, K=3; pass --replace to measure it "
            "again"), err
    assert set(_cells(out)) == {("off", 3)}


def _hold_lock(directory, ready):
    with _files.locked_directory(directory):
        os.write(ready, b"x")
        time.sleep(60)


def test_a_writer_holding_the_run_past_the_timeout_is_a_conflict(servers, prompts, tmp_path,
                                                                 monkeypatch):
    out = tmp_path / "run"
    goldenal.measure(servers[0].url, out=str(out), model="tiny-llama",
                     draft="tiny-llama-draft", k=3, thinking="off", prompts=prompts,
                     max_tokens=64)
    before = snapshot(out)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _hold_lock(str(out), write)
        finally:
            os._exit(0)
    try:
        assert os.read(read, 1) == b"x"
        monkeypatch.setattr(_files, "LOCK_TIMEOUT", 0.3)
        with pytest.raises(ConflictError, match=r"another writer has held the lock for 0\.3 s; "
                                                r"nothing written for the cell thinking on, K=3"):
            goldenal.measure(servers[0].url, out=str(out), model="tiny-llama",
                             draft="tiny-llama-draft", k=3, thinking="on", prompts=prompts,
                             max_tokens=64)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
        os.close(write)
    assert snapshot(out) == before
