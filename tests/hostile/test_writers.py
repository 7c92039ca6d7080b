"""Writers under crashes and concurrency: ``inject``, ``audit --fix``, and the readers after them.

* kill -9 in the middle of a multi-file ``inject`` (three recipes and an env
  file in two directories), at random instants: once ``audit`` has read the
  tree (it recovers every directory holding a journal before reading it), every
  file carries the same generation, and nothing is left beside them;
* concurrent edits: an ``inject`` loop and another writer's loop on one file;
  ``inject`` takes the lock before it reads, so no edit of the other is lost;
* a writer that does not take the lock, changing the file between ``inject``'s
  read and its write: refused with one line, exit 3, the other's bytes kept;
* ``audit`` never reads the staged and journal files of a write, and
  ``audit --fix`` never edits them; ``audit --fix`` waits for the lock of a
  directory it writes, and never writes a file changed since its read.
"""

import os
import random
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

import goldenal
from conftest import PACKAGED
from goldenal.core import files as _files
from goldenal.core.errors import ConflictError
from goldenal.apply.inject import inject_files
from hostile.hostile_support import fork, run_goldenal, snapshot

DATA = Path(__file__).parent.parent / "data" / "inject"
FILES = {"one/vllm_disagg.yaml": "vllm_disagg.yaml", "two/sglang_agg.yaml": "sglang_agg.yaml",
         "two/trtllm_extra.yaml": "trtllm_extra.yaml", "two/trtllm_extra.env": "trtllm_extra.env"}
RECIPES = [name for name in FILES if not name.endswith(".env")]
KILLS = int(os.environ.get("GOLDENAL_HOSTILE_KILLS", "150")) // 5
# the value each file carries: vLLM's length, SGLang's length, TensorRT-LLM's AL - 1
CARRIED = {"one/vllm_disagg.yaml": (r'"synthetic_acceptance_length":([0-9.]+)', 0),
           "two/sglang_agg.yaml": (r"SGLANG_SIMULATE_ACC_LEN: '([0-9.]+)'", 0),
           "two/trtllm_extra.env": (r"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=([0-9.]+)", 1)}


@pytest.fixture
def tree(tmp_path):
    for name, source in FILES.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(DATA / source, tmp_path / name)
    _inject(tmp_path, 1)
    return tmp_path


def _al(generation):
    """The explicit AL of a generation (1..90): 2.01 ... 2.90."""
    return f"2.{(generation - 1) % 90 + 1:02d}"


def _inject(tree, generation):
    inject_files([tree / name for name in RECIPES], thinking="on", al=_al(generation),
                 force=True)


def _inject_loop(tree, start):
    generation = start
    while True:
        generation += 1
        _inject(tree, generation)


def _generation(tree):
    """The one AL every file carries (as text, 2 decimals); fails on a mixed tree."""
    carried = {}
    for name, (pattern, offset) in CARRIED.items():
        values = re.findall(pattern, (tree / name).read_text())
        assert values, (name, (tree / name).read_text())
        carried[name] = {f"{float(v) + offset:.2f}" for v in values}
    held = set().union(*carried.values())
    assert len(held) == 1, carried
    return held.pop()


def _audit(tree):
    """What a user's ``goldenal audit`` reads (in-process: the same walk)."""
    return goldenal.audit_report([str(tree)], root=str(tree), settings=False,
                                 golden_dir=str(PACKAGED))


def _leftovers(tree):
    return sorted(str(p.relative_to(tree)) for p in tree.rglob(".goldenal*"))


def test_kill_9_mid_inject_then_audit_reads_one_generation(tree):
    rng = random.Random(20261204)
    seen = set()
    for i in range(KILLS):
        start = _generation(tree)
        pid = fork(_inject_loop, tree, int(start[2:]))
        time.sleep(rng.uniform(0.0, 0.4))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status), f"the inject loop failed at {i}"
        report = _audit(tree)
        # recovered before read: no leftover is read as a recipe, none remains
        assert not [f for f in report.findings if ".goldenal" in f.path], report.findings
        assert _leftovers(tree) == []
        seen.add(_generation(tree))
    assert len(seen) > KILLS // 6       # the injects really did commit between the kills


def test_audit_as_a_user_runs_it_recovers_a_crashed_inject_first(tree, monkeypatch):
    before = snapshot(tree)
    real = os.replace

    def crash_after_first_file(src, dst, **kw):
        real(src, dst, **kw)
        if os.path.basename(dst) == "vllm_disagg.yaml":
            raise KeyboardInterrupt     # stands for kill -9: nothing after it runs
    monkeypatch.setattr(_files.os, "replace", crash_after_first_file)
    monkeypatch.setattr(_files._Transaction, "_abort", lambda self: None)
    with pytest.raises(KeyboardInterrupt):
        _inject(tree, 2)
    monkeypatch.undo()
    assert _leftovers(tree) and snapshot(tree) != before       # mixed, with its journals
    # the staged copies hold the new text: knobs a walk would have read as recipes
    assert any(b"2.02" in data for name, data in snapshot(tree).items() if "staged" in name)
    rc, out, err = run_goldenal("audit", ".", "--isolated", "--golden-dir", PACKAGED,
                                "--no-cache", cwd=tree)
    assert ".goldenal" not in out + err
    assert snapshot(tree) == before


def test_staged_and_journal_files_are_never_read_nor_fixed(tmp_path):
    """Leftovers of writes killed before their commit point: removed, never read."""
    serve = (DATA.parent / "audit" / "repo" / "benchmarks" / "single_node" / "serve_configs"
             / "minimax-m3-agentic-serve.yaml").read_bytes()
    names = (".goldenal-staged-0123abcd.tmp", ".goldenal-fix-0123abcd.tmp")
    for name in names:
        (tmp_path / name).write_bytes(serve)
    (tmp_path / "notes.txt").write_text("nothing here\n")
    rc, out, err = run_goldenal("audit", ".", "--isolated", "--golden-dir", PACKAGED,
                                "--no-cache", "--fix", cwd=tmp_path)
    assert (rc, err) == (0, "Fixed 0 finding(s) in 0 file(s); 0 not fixed.\n")
    assert out == ("Found 0 findings (0 errors, 0 warnings, 0 info).\n"
                   "Checked 0 serve configs in 1 file read; skipped 0 files.\n")
    assert sorted(snapshot(tmp_path)) == ["notes.txt"]
    # named on the command line, one is still not read
    (tmp_path / names[0]).write_bytes(serve)
    rc, out, err = run_goldenal("audit", names[0], "--isolated", "--golden-dir", PACKAGED,
                                "--no-cache", cwd=tmp_path)
    assert out.startswith(f"{names[0]}:1:1: GAL306 a journal or temporary of goldenal's "
                          "writers; not read"), out
    assert (tmp_path / names[0]).read_bytes() == serve


def _edit_loop(path, count):
    """Another writer that takes the lock: append a line, ``count`` times."""
    for i in range(count):
        with _files.locked_directory(path.parent):
            text = path.read_text()
            _files.write_texts_atomic({path: text + f"# edit {i}\n"}, expected={path: text})
        time.sleep(0.005)


def _inject_n(tree, count):
    for generation in range(2, 2 + count):
        _inject(tree, generation)


def test_concurrent_edits_lose_no_update(tree):
    edits = 20
    target = tree / RECIPES[0]
    writers = [fork(_edit_loop, target, edits), fork(_inject_n, tree, edits)]
    for pid in writers:
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    text = target.read_text()
    assert re.findall(r"^# edit (\d+)$", text, re.M) == [str(i) for i in range(edits)]
    assert _generation(tree) == _al(1 + edits)     # the last inject's value, everywhere
    assert _leftovers(tree) == []


def test_a_file_changed_between_injects_read_and_write_is_refused(tree, run_cli, monkeypatch):
    from goldenal.apply import inject as inject_module

    target = tree / RECIPES[0]
    plan = inject_module._inject_text

    def plan_then_someone_edits(path, *args, **kw):
        result = plan(path, *args, **kw)
        if path.endswith("vllm_disagg.yaml"):
            with open(target, "a") as fh:    # an editor that takes no lock
                fh.write("# saved by an editor\n")
        return result
    monkeypatch.setattr(inject_module, "_inject_text", plan_then_someone_edits)
    with pytest.raises(ConflictError, match="changed since it was read"):
        _inject(tree, 2)
    edited = target.read_text()
    assert edited.endswith("# saved by an editor\n") and _generation(tree) == _al(1)
    monkeypatch.chdir(tree)
    code, out, err = run_cli("inject", RECIPES[0], "--thinking", "on", "--force")
    assert (code, out) == (3, "")
    assert err == (f"error: {RECIPES[0]}: changed since it was read (another writer); nothing "
                   "written: run again\n")
    assert target.read_text() == edited + "# saved by an editor\n"
    assert _leftovers(tree) == []


def _hold(directory, ready, seconds):
    with _files.locked_directory(directory):
        os.write(ready, b"x")
        time.sleep(seconds)


def _wrong_value_tree(tmp_path):
    root = tmp_path / "repo"
    (root / "serve").mkdir(parents=True)
    serve = (DATA.parent / "audit" / "repo" / "benchmarks" / "single_node" / "serve_configs"
             / "minimax-m3-agentic-serve.yaml")
    shutil.copy(serve, root / "serve" / "minimax-m3-agentic-serve.yaml")
    return root, root / "serve" / "minimax-m3-agentic-serve.yaml"


def test_audit_fix_waits_for_the_lock_of_a_directory_it_writes(tmp_path, monkeypatch):
    root, target = _wrong_value_tree(tmp_path)
    read, write = os.pipe()
    pid = fork(_hold, target.parent, write, 60)
    try:
        assert os.read(read, 1) == b"x"
        monkeypatch.setattr(_files, "LOCK_TIMEOUT", 0.3)
        from goldenal.auditing.fix import fix_findings

        def audit_with(overlay):
            return goldenal.audit([str(root)], root=str(root), settings=False,
                                  golden_dir=str(PACKAGED), overlay=overlay)
        with pytest.raises(OSError, match="another writer has held the lock for 0.3 s"):
            fix_findings(audit_with(None), str(root), audit_with)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
        os.close(write)
    assert b"3.11" in target.read_bytes()


def test_audit_fix_never_writes_a_file_changed_after_its_locked_read(tmp_path):
    from goldenal.auditing.fix import fix_findings

    root, target = _wrong_value_tree(tmp_path)
    calls = []

    def audit_with(overlay):
        calls.append(overlay)
        if len(calls) == 3:     # the check of the fix: a writer without the lock comes by
            with open(target, "ab") as fh:
                fh.write(b"# saved by an editor\n")
        return goldenal.audit([str(root)], root=str(root), settings=False,
                              golden_dir=str(PACKAGED), overlay=overlay)
    result = fix_findings(audit_with(None), str(root), audit_with)
    assert result.fixed == () and result.files == ()
    assert {reason for _, reason in result.skipped} == \
        {"not written: changed since it was read"}
    assert target.read_bytes().endswith(b"# saved by an editor\n")
    assert b"3.11" in target.read_bytes()
    # the first call under the lock audits exactly the bytes it will edit
    assert calls[1] == {str(target): calls[1][str(target)]} and b"3.11" in calls[1][str(target)]
