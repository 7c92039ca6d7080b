"""The audit's persistent per-file cache: findings identical cold and warm, never stale."""

import json
import os
import shutil

from goldenal.cli import main
from goldenal.lint import audit_report
from goldenal.lint.cache import Cache, cache_dir

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
    import goldenal.lint.shell as shell

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
    from goldenal.registry import load_registry

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
