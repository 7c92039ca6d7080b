"""A write of several files in several directories (``inject``) survives kill -9.

``files.write_texts_atomic`` keeps an undo journal in each directory it
writes; the first directory's journal is removed at the commit point.  Here a
forked writer rewrites four files in three directories, over and over, and is
killed at random instants and at every file operation of one write in turn.
After a crash every file holds its old or its new bytes, and once the
directories are recovered (the next goldenal write to them locks and
recovers each; here ``locked_directory``) all four hold the same generation
and nothing is left beside them.
"""

import os
import random
import signal
import time

import pytest

from goldenal.core import files as _files
from goldenal.apply.inject import inject_files
from hostile.hostile_support import die_at_operation, fork, run_goldenal, snapshot
from hostile.test_inject_all_or_nothing import DATA, EXPECTED, GOOD

# a write of four files flushes each to disk (about 80 ms): kills up to 0.3 s after the start
KILLS = int(os.environ.get("GOLDENAL_HOSTILE_KILLS", "150")) // 2
# the primary directory sorts first; b holds two files, one of them created by the write
FILES = ("a/serve.yaml", "b/launch.sh", "b/extra.env", "c/recipe.yaml")


@pytest.fixture
def tree(tmp_path):
    for name in FILES[:2] + FILES[3:]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("generation 0\n")
    return tmp_path


def _write(tree, generation):
    _files.write_texts_atomic({tree / name: f"generation {generation}\n" for name in FILES})


def _writer_loop(tree, start):
    generation = start
    while True:
        generation += 1
        _write(tree, generation)


def _recover(tree):
    """What the next goldenal write to each directory does first."""
    for name in ("c", "b", "a"):    # any order: a secondary may recover before its primary
        with _files.locked_directory(tree / name):
            pass


def _generations(tree):
    """The generation each file holds (None: not there); every file is whole."""
    out = {}
    for name in FILES:
        try:
            text = (tree / name).read_text()
        except FileNotFoundError:
            out[name] = None
            continue
        assert text.startswith("generation ") and text.endswith("\n"), (name, text)
        out[name] = int(text.split()[1])
    return out


def _assert_consistent(tree):
    _recover(tree)
    generations = _generations(tree)
    held = set(generations.values())
    # extra.env is created by the first write: before it, it is absent with generation 0
    assert len(held - {None}) == 1 and (None not in held or held == {None, 0}), generations
    left = [p for p in tree.rglob(".*")]
    assert not left, left
    return held - {None}


def test_kill_9_at_random_instants_leaves_one_generation_everywhere(tree):
    rng = random.Random(20261202)
    seen = set()
    for i in range(KILLS):
        (start,) = _assert_consistent(tree)
        pid = fork(_writer_loop, tree, start)
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status), f"writer failed at {i}"
        seen |= _assert_consistent(tree)
    assert len(seen) > KILLS // 4      # the writes really did commit between the kills


def _count_then_die(tree, die_at):
    """Write generation 1; at the ``die_at``-th file operation, kill -9 ourselves."""
    calls = die_at_operation(die_at, ("replace", "unlink", "fsync", "chmod", "open", "write",
                                      "link", "rename"))
    _write(tree, 1)
    os._exit(100 + min(calls[0], 100))


def test_kill_9_at_every_file_operation_of_a_write(tree):
    before = snapshot(tree)
    die_at, crashes, outcomes = 1, 0, set()
    while True:
        pid = fork(_count_then_die, tree, die_at)
        _, status = os.waitpid(pid, 0)
        if not os.WIFSIGNALED(status):
            break  # the write finished before the die_at-th operation: every point was tried
        crashes += 1
        outcomes |= _assert_consistent(tree)
        if _generations(tree)["a/serve.yaml"] == 1:     # committed: back to the old files
            (tree / "b" / "extra.env").unlink()
            for name in FILES[:2] + FILES[3:]:
                (tree / name).write_text("generation 0\n")
        assert snapshot(tree) == before
        die_at += 1
    assert crashes > 30 and outcomes == {0, 1}  # killed before and after the commit point


def test_an_interrupted_inject_is_put_back_by_the_next_inject(tmp_path, monkeypatch):
    """The CLI as a user runs it: a crash mid-commit, then ``goldenal inject`` on one file."""
    for name in GOOD + ["trtllm_extra.env"]:
        sub = tmp_path / ("one" if name.startswith("vllm") else "two")
        sub.mkdir(exist_ok=True)
        (sub / name).write_bytes((DATA / name).read_bytes())
    before = snapshot(tmp_path)
    paths = [tmp_path / ("one" if n.startswith("vllm") else "two") / n for n in GOOD]

    def crash_after_first_file(src, dst, **kw):
        real(src, dst, **kw)
        if os.path.basename(dst) == "vllm_disagg.yaml":
            raise KeyboardInterrupt     # stands for kill -9: nothing after it runs
    real = os.replace
    monkeypatch.setattr(_files.os, "replace", crash_after_first_file)
    monkeypatch.setattr(_files._Transaction, "_abort", lambda self: None)
    with pytest.raises(KeyboardInterrupt):
        inject_files(paths, thinking="on")
    monkeypatch.undo()
    # a mix: the first recipe new, the others old, journals and backups beside them
    assert (tmp_path / "one" / "vllm_disagg.yaml").read_bytes() == \
        (DATA / EXPECTED["vllm_disagg.yaml"]).read_bytes()
    assert (tmp_path / "one" / _files.JOURNAL_NAME).exists()
    assert (tmp_path / "two" / _files.JOURNAL_NAME).exists()
    # the next inject of a file of the second directory rolls it back before reading it
    rc, _, err = run_goldenal("inject", "two/sglang_agg.yaml", "--thinking", "on", "--check",
                              cwd=tmp_path)
    assert rc == 1 and "would change" in err or "change" in err, err
    assert not (tmp_path / "two" / _files.JOURNAL_NAME).exists()
    # and one of the first (the primary) rolls back every directory of the write
    rc, _, err = run_goldenal("inject", "one/vllm_disagg.yaml", "--thinking", "on", "--check",
                              cwd=tmp_path)
    assert snapshot(tmp_path) == before
    rc, _, err = run_goldenal("inject", "one/vllm_disagg.yaml", "--thinking", "on",
                              cwd=tmp_path)
    assert rc == 0, err
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k != "one/vllm_disagg.yaml"} == \
        {k: v for k, v in before.items() if k != "one/vllm_disagg.yaml"}
    assert after["one/vllm_disagg.yaml"] == (DATA / EXPECTED["vllm_disagg.yaml"]).read_bytes()
