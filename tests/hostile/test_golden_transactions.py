"""A golden directory is never left half-written, and concurrent writers keep every entry.

Crashes are real ``kill -9`` of a forked writer (at random instants, and at
every file operation of one write in turn); a full disk and a read-only
manifest are simulated.  After any of them, a reader sees either the old or
the new directory, consistent: every curve in the manifest, the manifest
readable, the index current or not served.
"""

import errno
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import goldenal
from goldenal.core import files as _files
from goldenal.golden.curvefile import load_directory, read_manifest
from goldenal.golden.importer import import_curve
from goldenal.golden.validation import validate
from hostile.hostile_support import die_at_operation, fork as _fork, snapshot, upstream

# random kill instants per run (GOLDENAL_HOSTILE_KILLS=1000 for a long soak)
KILLS = int(os.environ.get("GOLDENAL_HOSTILE_KILLS", "150"))


def _writer_loop(golden, scratch, seed):
    """Write forever: a new curve, then a replaced value of an existing one."""
    j = 0
    while True:
        j += 1
        model = f"model-{seed}-{j}"
        import_curve(upstream(scratch, f"n{j}", model=model), golden, curve_id=f"c{seed}x{j}",
                     method="eagle3", draft=[f"org/draft-{seed}-{j}"])
        value = "2.80" if j % 2 else "2.85"
        import_curve(upstream(scratch, "base", value=value), golden, curve_id="base",
                     method="eagle3", draft=["org/base"], replace_reason=f"round {j}")


def _assert_consistent(golden, *, values=("2.78", "2.80", "2.85")):
    """What a reader sees after a crash: the old or the new directory, whole."""
    # a served value first (lookup finishes an interrupted write before reading)
    served = str(goldenal.lookup(curve="base", k=3, thinking="on", golden_dir=golden))
    assert served in values
    assert not _files.pending_journal(golden)
    # a write killed before its commit point may leave staged temporaries: no reader
    # looks at them, and the next writer removes them
    assert all(n.startswith(".goldenal-") for n in os.listdir(golden) if n.startswith("."))
    manifest = read_manifest(golden)
    files = sorted(n for n in os.listdir(golden) if n.endswith(".yaml") and n != "manifest.yaml")
    assert sorted(e["file"] for e in manifest.values()) == files  # no curve missing or extra
    report = validate(golden)
    assert report.ok, [str(p) for p in report.problems]  # includes "index is current"
    assert load_directory(golden)["base"].cells["on"][3] == served
    # the index is what is served, and it says the same
    assert goldenal.golden.registry._read_index(golden)["base"].cells["on"][3] == served


@pytest.fixture
def golden(tmp_path, upstream_file):
    out = tmp_path / "golden"
    import_curve(upstream_file("base"), out, method="eagle3", draft=["org/base"])
    return str(out)


def test_kill_9_at_random_instants_never_leaves_a_half_written_directory(golden, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    rng = random.Random(20261201)
    for i in range(KILLS):
        pid = _fork(_writer_loop, golden, str(scratch), i)
        time.sleep(rng.uniform(0.0, 0.03))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) or os.WEXITSTATUS(status) == 0, f"writer failed at {i}"
        _assert_consistent(golden)
    goldenal.golden.curvefile.write_index(golden)  # any writer clears what killed ones left
    assert not [n for n in os.listdir(golden) if n.startswith(".")]


def _count_then_die(golden, scratch, die_at):
    """Import one new curve; at the ``die_at``-th file operation, kill -9 ourselves."""
    calls = die_at_operation(die_at)
    import_curve(upstream(scratch, "fresh", model="fresh-model", value="2.80"), golden,
                 curve_id="base", method="eagle3", draft=["org/base"], replace_reason="again")
    os._exit(100 + min(calls[0], 100))


def test_kill_9_at_every_file_operation_of_a_write(golden, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    before = snapshot(golden)
    die_at, crashes = 1, 0
    while True:
        pid = _fork(_count_then_die, golden, str(scratch), die_at)
        _, status = os.waitpid(pid, 0)
        if not os.WIFSIGNALED(status):
            break  # the write finished before the die_at-th operation: every point was tried
        crashes += 1
        _assert_consistent(golden, values=("2.78", "2.80"))
        for name in os.listdir(golden):  # what the next writer would remove
            if name.startswith(".goldenal-staged-"):
                os.unlink(os.path.join(golden, name))
        after = snapshot(golden)
        if str(goldenal.lookup(curve="base", k=3, thinking="on", golden_dir=golden)) == "2.80":
            # the new directory: put the old one back for the next kill point
            for name in set(snapshot(golden)) - set(before):
                os.unlink(os.path.join(golden, name))
            for name, data in before.items():
                with open(os.path.join(golden, name), "wb") as fh:
                    fh.write(data)
        else:
            assert after == before
        die_at += 1
    assert crashes > 20  # the write really has that many operations to die in


def test_read_only_manifest_leaves_everything_as_it_was(golden, upstream_file, run_cli):
    manifest = os.path.join(golden, "manifest.yaml")
    os.chmod(manifest, 0o444)
    before = snapshot(golden)
    code, out, err = run_cli("import", upstream_file("base", value="2.80"), "--golden-dir", golden,
                             "--replace", "re-measured")
    assert (code, out) == (2, "")
    assert err == f"error: {manifest}: file is read-only; nothing written\n"
    assert snapshot(golden) == before


@pytest.mark.parametrize("where", ["fsync", "mkstemp"])
def test_full_disk_leaves_everything_as_it_was_and_names_the_file(golden, upstream_file, run_cli,
                                                                  monkeypatch, where):
    source = upstream_file("base", value="2.80")
    before = snapshot(golden)
    import tempfile

    real_mkstemp, calls = tempfile.mkstemp, [0]

    def no_space(*args, **kwargs):
        calls[0] += 1
        if where == "fsync" or calls[0] == 2:  # the second staged file: mid-transaction
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_mkstemp(*args, **kwargs)

    if where == "fsync":
        monkeypatch.setattr(_files.os, "fsync", no_space)
    else:
        monkeypatch.setattr(tempfile, "mkstemp", no_space)
    code, out, err = run_cli("import", source, "--golden-dir", golden, "--replace", "re-measured")
    monkeypatch.undo()
    assert (code, out) == (2, "")
    named = "base.yaml" if where == "fsync" else "manifest.yaml"
    assert err == f"error: {os.path.join(golden, named)}: No space left on device\n"
    assert snapshot(golden) == before


def test_six_parallel_imports_keep_all_six(tmp_path):
    golden, scratch = tmp_path / "golden", tmp_path / "scratch"
    scratch.mkdir()
    sources = [upstream(scratch, f"par{i}", model=f"parallel-{i}") for i in range(6)]
    procs = [subprocess.Popen([sys.executable, "-m", "goldenal", "import", src, "--golden-dir",
                               str(golden), "--method", "eagle3", "--draft", f"org/d{i}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, src in enumerate(sources)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, results
    assert sorted(read_manifest(golden)) == [f"par{i}" for i in range(6)]
    assert validate(golden).ok
    assert len(goldenal.load_registry(golden)) == 6


def test_import_refuses_what_validate_rejects(golden_copy, tmp_path, run_cli):
    no_source = tmp_path / "nosource.yaml"
    no_source.write_text("new-model:\n  thinking_on:\n    3: 2.80\n")
    clash = upstream(tmp_path, "clash", model="other-model")
    before = snapshot(golden_copy)
    code, _, err = run_cli("import", no_source, "--golden-dir", golden_copy, "--method", "eagle3",
                           "--draft", "org/new")
    assert code == 2
    assert err == (f"error: {golden_copy}/nosource.yaml:1: provenance has no source run URL "
                   "(the same check as `goldenal validate`; nothing written)\n")
    # a name already given to another model
    code, _, err = run_cli("import", clash, "--golden-dir", golden_copy, "--method", "eagle3",
                           "--draft", "org/new", "--alias", "minimaxm3")
    assert code == 2
    assert err == (f"error: {golden_copy}/manifest.yaml: name 'minimaxm3' is given to models "
                   "other-model (clash) and minimax-m3 (minimaxm3_eagle3) (the same check as "
                   "`goldenal validate`; nothing written)\n")
    assert snapshot(golden_copy) == before
    # what validate accepts, import writes; and validate accepts what import wrote
    assert run_cli("import", clash, "--golden-dir", golden_copy, "--method", "eagle3",
                   "--draft", "org/new")[0] == 0
    assert run_cli("validate", golden_copy)[0] == 0


def test_one_identity_rule_refuses_a_curve_differing_only_in_letter_case(golden, tmp_path):
    """The writer and `validate` decide "the same curve" by one rule: a second curve of
    model Model-X / method EAGLE3 / head ORG/BASE is the first curve again, refused."""
    from goldenal.golden.curves import curve_identity
    from goldenal.core.errors import ConflictError

    assert curve_identity("Model-X", "EAGLE3", "ORG/Base", {"v": 1}) == curve_identity(
        "model-x", "eagle3", ["org/base"], {"v": "1"})
    import_curve(upstream(tmp_path, "m", model="model-x"), golden, curve_id="first",
                 method="eagle3", draft=["org/base"])
    before = snapshot(golden)
    with pytest.raises(ConflictError, match="curve first already holds this identity"):
        import_curve(upstream(tmp_path, "m2", model="Model-X"), golden, curve_id="second",
                     method="EAGLE3", draft=["ORG/BASE"])
    assert snapshot(golden) == before
