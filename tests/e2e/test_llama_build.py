"""The llama-server build cache: location, atomic completion, one build at a time.

The real build runs in ``.ci/run`` and the fixtures; here ``_build`` is replaced
by a stand-in, so these tests need neither network nor compiler.
"""

import threading
import time

import pytest

from . import llama_build


def _fake_build(calls, fail=False, delay=0.0):
    def build(tmp):
        calls.append(tmp)
        time.sleep(delay)
        (tmp / "build.log").write_text("# fake\n")
        if fail:
            raise llama_build.BuildError("cmake failed (exit 1); see build.log")
        (tmp / "bin").mkdir()
        (tmp / "bin" / "llama-server").write_text("#!/bin/sh\n")
        (tmp / llama_build.MARKER).write_text("done\n")
    return build


def test_cache_dir_is_keyed_by_version_and_overridable(monkeypatch, tmp_path):
    monkeypatch.delenv(llama_build.ENV_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert llama_build.cache_dir() == tmp_path / "goldenal" / "llama-server" / llama_build.VERSION
    monkeypatch.setenv(llama_build.ENV_DIR, str(tmp_path / "mine"))
    assert llama_build.cache_dir() == tmp_path / "mine"


def test_a_build_lands_complete_and_is_reused(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(llama_build, "_build", _fake_build(calls))
    root = tmp_path / "cache" / "0.3.36"
    assert llama_build.ensure_llama_server(root) == root
    assert llama_build.is_complete(root) and len(calls) == 1
    assert llama_build.ensure_llama_server(root) == root and len(calls) == 1
    assert sorted(p.name for p in root.parent.iterdir()) == ["0.3.36", "0.3.36.lock"]


def test_an_incomplete_directory_is_rebuilt_and_a_failure_leaves_nothing(monkeypatch, tmp_path):
    root = tmp_path / "0.3.36"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "llama-server").write_text("half")      # no COMPLETE marker
    calls = []
    monkeypatch.setattr(llama_build, "_build", _fake_build(calls, fail=True))
    with pytest.raises(llama_build.BuildError, match="cmake failed"):
        llama_build.ensure_llama_server(root)
    assert not llama_build.is_complete(root)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.3.36", "0.3.36.failed-build.log",
                                                          "0.3.36.lock"]
    monkeypatch.setattr(llama_build, "_build", _fake_build(calls))
    assert llama_build.is_complete(llama_build.ensure_llama_server(root)) and len(calls) == 2


def test_concurrent_callers_share_one_build(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(llama_build, "_build", _fake_build(calls, delay=0.3))
    root = tmp_path / "0.3.36"
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        llama_build.ensure_llama_server(root))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [root] * 3 and len(calls) == 1


def test_a_build_says_what_it_does_on_the_terminal_even_under_capture(monkeypatch, tmp_path,
                                                                      capsys):
    import io

    terminal = io.StringIO()
    monkeypatch.setattr("sys.__stderr__", terminal)
    calls = []

    def build(tmp):
        with open(tmp / "build.log", "w") as log:
            llama_build._step(1, "cmake and ninja", log)
        _fake_build(calls)(tmp)

    monkeypatch.setattr(llama_build, "_build", build)
    root = tmp_path / "0.3.36"
    llama_build.ensure_llama_server(root)
    lines = terminal.getvalue().splitlines()
    assert lines[0] == (f"[llama-server build] no llama-server in {root} yet: building it once "
                        f"for the end-to-end tests ({llama_build.COST}; later runs reuse it; "
                        "GOLDENAL_SKIP_E2E=1 skips those tests)")
    assert lines[1].startswith("[llama-server build] step 1/4: cmake and ninja (log: ")
    assert lines[1].endswith("/build.log)")
    assert lines[2].startswith("[llama-server build] done in ") and lines[2].endswith(str(root))
    assert capsys.readouterr() == ("", "")  # nothing went to the captured streams
    terminal.truncate(0)
    llama_build.ensure_llama_server(root)  # built: silent
    assert terminal.getvalue() == ""


def test_the_long_step_says_it_is_still_running(monkeypatch, tmp_path):
    import io
    import sys

    terminal = io.StringIO()
    monkeypatch.setattr("sys.__stderr__", terminal)
    monkeypatch.setattr(llama_build, "HEARTBEAT", 0.05)
    with open(tmp_path / "build.log", "w") as log:
        llama_build._run([sys.executable, "-c", "import time; time.sleep(0.3)"], log,
                         heartbeat="still compiling")
    beats = terminal.getvalue().splitlines()
    assert beats and all(b.startswith("[llama-server build] still compiling: ") for b in beats)
    assert beats[0].endswith(f"min so far (log: {tmp_path / 'build.log'})")
