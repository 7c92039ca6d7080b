"""The audit's persistent per-file cache: findings identical cold and warm, never stale."""

import json
import os
import shutil
import time

import pytest

from goldenal.cli import main
from goldenal.auditing import audit_report
from goldenal.auditing.cache import Cache, cache_dir

HERE = os.path.dirname(__file__)
REPO = os.path.join(HERE, "data", "audit", "repo")


def _report(root, cache):
    r = audit_report([str(root)], root=str(root), cache=cache, settings=False)
    return r.findings, r.files_read, r.configs_checked, r.skipped


def test_warm_equals_cold_on_the_fixture_tree(tmp_path):
    cold = _report(REPO, False)
    store = tmp_path / "cache"
    first = _report(REPO, str(store))
    written = list(store.iterdir())
    assert len(written) == 1 and written[0].name.startswith("audit-")
    assert first == cold
    assert _report(REPO, str(store)) == cold            # answered from the cache
    assert not any(n.startswith("audit-") for n in os.listdir(REPO))   # nothing in the tree


def test_warm_run_answers_from_the_cache(tmp_path, monkeypatch):
    store = tmp_path / "cache"
    _report(REPO, str(store))
    import goldenal.auditing.shell as shell

    def boom(*a, **k):
        raise AssertionError("parsed again")

    monkeypatch.setattr(shell, "script_configs", boom)
    assert _report(REPO, str(store)) == _report(REPO, str(store))


def test_an_edited_file_is_read_again(tmp_path):
    tree = tmp_path / "repo"
    shutil.copytree(REPO, tree)
    store = tmp_path / "cache"
    before = _report(tree, str(store))
    script = next(p for p in sorted(tree.rglob("*.sh"))
                  if "SGLANG_SIMULATE_ACC_LEN=" in p.read_text())
    text = script.read_text()
    i = text.index("SGLANG_SIMULATE_ACC_LEN=") + len("SGLANG_SIMULATE_ACC_LEN=")
    script.write_text(text[:i] + "9.99 " + text[i:])       # same length class, new bytes
    after = _report(tree, str(store))
    assert after == _report(tree, False)
    assert after != before


def test_a_changed_registry_is_never_answered_from_the_cache(tmp_path, golden_copy):
    from goldenal.golden.registry import load_registry

    store = tmp_path / "cache"
    _report(REPO, str(store))
    reg = load_registry(str(golden_copy))
    cid = next(iter(reg.curves))
    reg.curves.pop(cid)
    cold = audit_report([REPO], registry=reg, settings=False).findings
    assert audit_report([REPO], registry=reg, settings=False, cache=str(store)).findings == cold


def test_a_damaged_or_foreign_cache_file_is_an_empty_cache(tmp_path):
    store = tmp_path / "cache"
    _report(REPO, str(store))
    (path,) = store.iterdir()
    path.write_bytes(b"\x00garbage")
    assert _report(REPO, str(store)) == _report(REPO, False)
    c = Cache(REPO, str(store))
    assert c.old                                      # rewritten whole by the last run


def test_cli_no_cache_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GOLDENAL_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == str(tmp_path / "c")
    code = main(["audit", REPO, "--isolated", "--no-cache", "--format", "json"])
    out = capsys.readouterr().out
    assert code == 1 and not (tmp_path / "c").exists()
    assert main(["audit", REPO, "--isolated", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == json.loads(out)
    assert len(list((tmp_path / "c").iterdir())) == 1


# -- the cache cannot change a verdict -------------------------------------------------------

def _entries(store):
    import marshal

    (path,) = store.iterdir()
    return path, marshal.loads(path.read_bytes())


def _cold():
    return _report(REPO, False)


def test_an_edited_entry_is_a_miss_never_a_pass(tmp_path):
    """Emptied payloads (every script and recipe "says nothing") used to turn errors into a pass."""
    import marshal

    store = tmp_path / "cache"
    _report(REPO, str(store))
    path, doc = _entries(store)
    assert doc["entries"]
    for key, (payload, checksum) in doc["entries"].items():
        kind, _ = marshal.loads(payload)
        doc["entries"][key] = (marshal.dumps((kind, ())), checksum)
    path.write_bytes(marshal.dumps(doc))
    cold = _cold()
    assert any(f.severity == "error" for f in cold[0])
    assert _report(REPO, str(store)) == cold


def test_an_entry_moved_to_another_key_or_reshaped_is_a_miss(tmp_path):
    import marshal

    store = tmp_path / "cache"
    _report(REPO, str(store))
    path, doc = _entries(store)
    keys = sorted(doc["entries"])
    values = [doc["entries"][k] for k in keys]
    shapes = [None, b"", (b"x",), ("not bytes", b"0" * 16), 7]
    doc["entries"] = dict(zip(keys, values[1:] + values[:1]))    # every entry under another key
    for key, shape in zip(keys, shapes):
        doc["entries"][key] = shape
    path.write_bytes(marshal.dumps(doc))
    assert _report(REPO, str(store)) == _cold()


def test_the_save_never_follows_a_planted_name(tmp_path):
    """The old temporary was ``<cache>.<pid>.tmp``: a link planted there was written through."""
    store = tmp_path / "cache"
    store.mkdir(mode=0o700)
    c = Cache(REPO, str(store))
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    for pid in range(os.getpid() - 5, os.getpid() + 5):
        os.symlink(victim, f"{c.path}.{pid}.tmp")
    _report(REPO, str(store))
    assert victim.read_text() == "precious\n"
    assert os.path.isfile(c.path) and not os.path.islink(c.path)
    assert Cache(REPO, str(store)).old


def test_a_directory_others_can_write_or_do_not_own_is_never_used(tmp_path):
    store = tmp_path / "cache"
    _report(REPO, str(store))
    (path,) = store.iterdir()
    os.chmod(store, 0o777)
    assert Cache(REPO, str(store)).old == {}        # not read
    path.unlink()
    _report(REPO, str(store))
    assert list(store.iterdir()) == []             # nor written
    if os.getuid() == 0:
        os.chmod(store, 0o700)
        os.chown(store, 65534, -1)
        _report(REPO, str(store))
        assert list(store.iterdir()) == []


def test_a_fifo_a_link_or_a_directory_at_the_cache_path_is_ignored(tmp_path):
    import subprocess
    import sys

    store = tmp_path / "cache"
    store.mkdir(mode=0o700)
    path = Cache(REPO, str(store)).path
    # a valid cache elsewhere, reached through a link: not read, not replaced
    other = tmp_path / "other"
    _report(REPO, str(other))
    (real,) = other.iterdir()
    os.symlink(real, path)
    assert Cache(REPO, str(store)).old == {}
    _report(REPO, str(store))
    assert os.path.islink(path)
    os.unlink(path)
    os.mkdir(path)
    assert Cache(REPO, str(store)).old == {} and _report(REPO, str(store)) == _cold()
    assert os.path.isdir(path)
    os.rmdir(path)
    os.mkfifo(path)
    # the CLI as a user runs it: a pipe at the cache path neither hangs it nor is replaced
    env = dict(os.environ, GOLDENAL_CACHE_DIR=str(store))
    proc = subprocess.run([sys.executable, "-m", "goldenal", "audit", REPO, "--isolated",
                           "--format", "json"], capture_output=True, env=env, timeout=120)
    cold = subprocess.run([sys.executable, "-m", "goldenal", "audit", REPO, "--isolated",
                           "--format", "json", "--no-cache"], capture_output=True, env=env,
                          timeout=120)
    assert (proc.returncode, proc.stdout) == (cold.returncode, cold.stdout) == (1, cold.stdout)
    import stat

    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_the_suite_never_uses_the_users_cache():
    """Only the audit cache's own variable is redirected: the e2e build cache stays put."""
    from pathlib import Path

    from e2e import llama_build

    home = Path(os.path.expanduser("~")) / ".cache"
    assert not Path(cache_dir()).resolve().is_relative_to(home.resolve())
    assert os.environ.get("GOLDENAL_CACHE_DIR") == cache_dir()
    base = os.environ.get("XDG_CACHE_HOME") or str(home)
    if not os.environ.get(llama_build.ENV_DIR):
        assert llama_build.cache_dir() == Path(base) / "goldenal" / "llama-server" / \
            llama_build.VERSION


# -- whole runs: answered while nothing they read has changed -----------------------------------

def _aged(tree):
    """Every file's times a minute back: older than the racy window, as a checkout is."""
    old = time.time() - 60
    for p in [tree, *tree.rglob("*")]:
        os.utime(p, (old, old))


def _runs(monkeypatch):
    """A counter of the runs that read files (a run answered from the cache reads none)."""
    import goldenal.auditing.runner as runner

    calls, real = [], runner._run
    monkeypatch.setattr(runner, "_run", lambda *a: calls.append(a) or real(*a))
    return calls


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "repo"
    shutil.copytree(REPO, t)
    (t / ".git").mkdir()
    _aged(t)
    return t


def _knob_script(tree):
    return next(p for p in sorted(tree.rglob("*.sh")) if "SGLANG_SIMULATE_ACC_LEN=" in p.read_text())


def test_an_unchanged_tree_is_answered_whole(tree, tmp_path, monkeypatch):
    store = str(tmp_path / "cache")
    cold = _report(tree, False)
    assert _report(tree, store) == cold
    calls = _runs(monkeypatch)
    assert _report(tree, store) == cold and calls == []


def test_same_size_and_mtime_but_new_bytes_is_a_miss(tree, tmp_path, monkeypatch):
    store = str(tmp_path / "cache")
    before = _report(tree, store)
    script = _knob_script(tree)
    st = script.stat()
    text = script.read_text()
    i = text.index("SGLANG_SIMULATE_ACC_LEN=") + len("SGLANG_SIMULATE_ACC_LEN=")
    script.write_text(text[:i] + "9" + text[i + 1:])        # one digit: the same size
    os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns))   # the old mtime put back
    calls = _runs(monkeypatch)
    after = _report(tree, store)
    assert calls and after == _report(tree, False) and after != before


@pytest.mark.parametrize("change", ["edit", "add", "remove", "ignore", "outer-ignore"])
def test_every_change_to_what_is_read_is_a_miss(tree, tmp_path, change):
    store = str(tmp_path / "cache")
    sub = tree / "benchmarks"
    before = _report(sub, store), _report(sub, store)
    script = _knob_script(tree)
    rel = script.relative_to(sub).as_posix()      # as findings name it
    if change == "edit":
        script.write_text(script.read_text().replace("SGLANG_SIMULATE_ACC_LEN=", "X="))
    elif change == "add":
        (sub / "new.sh").write_text(script.read_text())
    elif change == "remove":
        script.unlink()
    elif change == "ignore":
        (script.parent / ".gitignore").write_text(script.name + "\n")
    else:   # above the audited directory, below the repository root
        (tree / ".gitignore").write_text(script.relative_to(tree).as_posix() + "\n")
    after = _report(sub, store)
    assert before[0] == before[1] and after != before[0]
    assert after == _report(sub, False)
    named = "new.sh" if change == "add" else rel       # the file whose findings come or go
    assert any(f.path == named for f in before[0][0]) != any(f.path == named for f in after[0])


def _value_findings(report):
    return {(f.path, f.line, f.code, f.expected) for f in report.findings}


def test_a_changed_curve_cell_is_a_miss(tree, tmp_path, golden_copy):
    from goldenal.golden.registry import load_registry

    store = str(tmp_path / "cache")
    reg = load_registry(str(golden_copy))
    first = audit_report([tree], registry=reg, settings=False, cache=store)
    cited = [f for f in first.findings if f.expected]
    assert cited
    curve = next(c for c in reg.curves.values()
                 if any(cited[0].expected in cells.values() for cells in c.cells.values()))
    for cells in curve.cells.values():
        for k, v in cells.items():
            if v == cited[0].expected:
                cells[k] = "1.11"
    warm = audit_report([tree], registry=reg, settings=False, cache=store)
    cold = audit_report([tree], registry=reg, settings=False)
    assert warm.findings == cold.findings
    assert _value_findings(warm) != _value_findings(first)


def test_changed_options_or_settings_are_a_miss(tree, tmp_path):
    store = str(tmp_path / "cache")
    full = _report(tree, store)
    kw = dict(root=str(tree), cache=store)
    narrowed = audit_report([tree], settings=False, extend_exclude=["benchmarks/"], **kw)
    assert narrowed.findings != full[0]
    assert narrowed == audit_report([tree], settings=False, extend_exclude=["benchmarks/"],
                                    root=str(tree))
    (tree / "pyproject.toml").write_text('[tool.goldenal]\nextend-exclude = ["benchmarks/"]\n')
    _aged(tree)
    assert audit_report([tree], **kw).findings == narrowed.findings
    (tree / "pyproject.toml").write_text('[tool.goldenal]\nextend-exclude = ["docs/"]\n')
    assert audit_report([tree], **kw) == audit_report([tree], root=str(tree))


def test_a_file_changed_within_the_racy_window_keeps_no_run(tree, tmp_path, monkeypatch):
    store = str(tmp_path / "cache")
    script = _knob_script(tree)
    script.write_text(script.read_text() + "\n")       # modified now
    calls = _runs(monkeypatch)
    first = _report(tree, store)
    assert _report(tree, store) == first and len(calls) == 2


def test_a_directory_deep_under_the_repository_root_is_cached(tree, tmp_path, monkeypatch):
    """The ignore files looked for above it are one record each, however many levels up."""
    deep = tree.joinpath(*"abcdefg")       # seven directories above it, the root too
    shutil.copytree(tree / "benchmarks", deep / "benchmarks")
    _aged(tree)
    store = str(tmp_path / "cache")
    first = _report(deep, store)
    assert first == _report(deep, False)
    calls = _runs(monkeypatch)
    assert _report(deep, store) == first and calls == []
    (tree / "a" / "b" / ".gitignore").write_text("benchmarks/\n")     # above the audited one
    assert _report(deep, store) == _report(deep, False) != first
