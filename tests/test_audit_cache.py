"""The audit's persistent per-file cache: findings identical cold and warm, never stale."""

import json
import os
import shutil

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
