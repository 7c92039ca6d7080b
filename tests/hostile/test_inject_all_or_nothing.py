"""``inject`` on several files writes all of them or none, as its help promises.

Every file is planned first; a refusal of any (the last one here) leaves every
file as it was, and a write error part-way through the commit (os.replace
failing on any of the files) puts back the files already replaced.  The files
are the inject fixtures: an srt-slurm vLLM disagg recipe, an SGLang agg recipe,
a TensorRT-LLM extra-LLM-API YAML with the env file written beside it.
"""

import errno
import os
import shutil
from pathlib import Path

import pytest

from goldenal.core import files as _files
from goldenal.apply.inject import NothingWritten, inject, inject_files
from hostile.hostile_support import failing_replace, run_goldenal, snapshot

DATA = Path(__file__).parent.parent / "data" / "inject"
GOOD = ["vllm_disagg.yaml", "sglang_agg.yaml", "trtllm_extra.yaml"]
EXPECTED = {"vllm_disagg.yaml": "vllm_disagg.expected.yaml",
            "sglang_agg.yaml": "sglang_agg.expected.yaml",
            "trtllm_extra.yaml": "trtllm_extra.yaml",       # its knob goes to the env file
            "trtllm_extra.env": "trtllm_extra.expected.env"}


@pytest.fixture
def work(tmp_path):
    for name in GOOD + ["trtllm_extra.env", "vllm_agg_pinned.yaml"]:
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path



def test_a_refusal_in_the_last_file_leaves_every_file_as_it_was(work):
    before = snapshot(work)
    rc, out, err = run_goldenal("inject", *GOOD, "vllm_agg_pinned.yaml", "--thinking", "on", cwd=work)
    assert (rc, out) == (3, "")
    assert err.splitlines() == [
        "error: vllm_agg_pinned.yaml:12: synthetic_acceptance_length is already pinned to 2.83, "
        "golden value is 2.78; use --force to overwrite",
        "error: nothing written: 1 of 4 files refused"]
    assert snapshot(work) == before


def test_every_refusal_gets_its_line_and_the_worst_exit_code(work):
    (work / "broken.yaml").write_text("backend:\n  type: [vllm\n")
    before = snapshot(work)
    rc, out, err = run_goldenal("inject", "broken.yaml", *GOOD, "vllm_agg_pinned.yaml", "--thinking",
                        "on", cwd=work)
    assert rc == 3
    lines = err.splitlines()
    assert lines[0].startswith("error: broken.yaml:3: not valid YAML: ")
    assert lines[1:] == [
        "error: vllm_agg_pinned.yaml:12: synthetic_acceptance_length is already pinned to 2.83, "
        "golden value is 2.78; use --force to overwrite",
        "error: nothing written: 2 of 5 files refused"]
    assert snapshot(work) == before


def test_without_a_refusal_all_are_written_and_a_second_run_changes_nothing(work):
    rc, out, err = run_goldenal("inject", *GOOD, "--thinking", "on", cwd=work)
    assert rc == 0, err
    assert err.splitlines() == [
        "vllm_disagg.yaml: changed 2 of 2 entries (decode K=3: 2.49, prefill K=3: 2.49)",
        "sglang_agg.yaml: changed 1 of 1 entry (aggregated K=3: 2.99)",
        "trtllm_extra.yaml: changed 1 of 1 entry (trtllm K=3: 1.78)"]
    for name, expected in EXPECTED.items():
        assert (work / name).read_bytes() == (DATA / expected).read_bytes(), name
    rc, out, err = run_goldenal("inject", *GOOD, "--thinking", "on", "--check", cwd=work)
    assert rc == 0 and all(line.endswith("nothing to change") for line in err.splitlines())


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_write_error_mid_commit_puts_back_every_file(work, monkeypatch, fail_at):
    """Three files are replaced (two recipes and the TRT-LLM env file); the n-th fails."""
    before = snapshot(work)
    replaced = []   # the files' replacements (the undo journal is put in place first)

    def fails(dst, n):
        if os.path.basename(dst) == _files.JOURNAL_NAME:
            return False
        replaced.append(dst)
        return len(replaced) == fail_at

    calls = failing_replace(monkeypatch, fails, errno.EIO)
    with pytest.raises(OSError) as info:
        inject_files([work / name for name in GOOD], thinking="on")
    calls = [name for name in calls if name != _files.JOURNAL_NAME]
    assert info.value.errno == errno.EIO
    assert info.value.filename == str(work / calls[fail_at - 1])   # names the file it concerns
    monkeypatch.undo()
    # every file holds its old bytes, and no temporary or backup is left beside them
    assert snapshot(work) == before
    order = ["vllm_disagg.yaml", "sglang_agg.yaml", "trtllm_extra.env"]
    # the replacements up to the failing one, then the old files put back, newest first
    assert calls == order[:fail_at] + order[:fail_at - 1][::-1]


def test_a_write_error_on_the_env_file_puts_back_its_recipe_too(tmp_path, monkeypatch):
    """One file with two outputs: a vLLM-less TRT-LLM YAML whose knob lands in the env file."""
    shutil.copy(DATA / "trtllm_extra.env", tmp_path / "trtllm_extra.env")
    recipe = tmp_path / "trtllm_extra.yaml"
    # a BOM on the YAML: it is written back with the file, and put back with it
    recipe.write_bytes(b"\xef\xbb\xbf" + (DATA / "trtllm_extra.yaml").read_bytes()
                       .replace(b"max_draft_len: 3\n", b"max_draft_len: 3\n    foo: 1\n"))
    before = snapshot(tmp_path)
    failing_replace(monkeypatch, lambda dst, n: dst.endswith(".env"), errno.ENOSPC)
    with pytest.raises(OSError, match="No space left on device"):
        inject(recipe, thinking="on", env_file=str(tmp_path / "trtllm_extra.env"))
    assert snapshot(tmp_path) == before


def test_a_hard_link_to_the_old_file_keeps_its_inode_on_rollback(tmp_path, monkeypatch):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a\n")
    b.write_text("old b\n")
    os.chmod(a, 0o640)
    inode = a.stat().st_ino
    failing_replace(monkeypatch, lambda dst, n: dst.endswith("b.txt"), errno.EIO)
    with pytest.raises(OSError):
        _files.write_texts_atomic({a: "new a\n", b: "new b\n"})
    assert (a.read_text(), b.read_text()) == ("old a\n", "old b\n")
    assert (a.stat().st_ino, a.stat().st_mode & 0o777) == (inode, 0o640)
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]


def test_a_file_named_twice_is_written_once(work):
    results = inject_files([work / "sglang_agg.yaml", work / "sglang_agg.yaml"], thinking="on")
    assert [r.written for r in results] == [True, True]
    assert (work / "sglang_agg.yaml").read_bytes() == \
        (DATA / "sglang_agg.expected.yaml").read_bytes()


def test_the_library_lists_every_refusal(work):
    before = snapshot(work)
    with pytest.raises(NothingWritten) as info:
        inject_files([work / name for name in GOOD + ["vllm_agg_pinned.yaml"]], thinking="on")
    assert [(os.path.basename(p), type(e).__name__) for p, e in info.value.errors] == [
        ("vllm_agg_pinned.yaml", "ConflictError")]
    assert [os.path.basename(r.path) for r in info.value.results] == GOOD
    assert not any(r.written for r in info.value.results)
    assert info.value.exit_code == 3
    assert snapshot(work) == before
