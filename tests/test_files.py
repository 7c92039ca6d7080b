"""Atomic writes: all or nothing, permissions kept."""

import os
import stat

import pytest

from goldenal.core.files import atomic_open, write_text_atomic


def test_failure_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "curve.yaml"
    path.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_open(path) as fh:
            fh.write("half")
            raise RuntimeError("disk full")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["curve.yaml"]


def test_permissions_and_line_endings_are_kept(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("old\n")
    path.chmod(0o755)
    write_text_atomic(path, "a\r\nb\n")
    assert path.read_bytes() == b"a\r\nb\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    new = tmp_path / "new.txt"
    write_text_atomic(new, "x")
    assert stat.S_IMODE(new.stat().st_mode) == 0o644


def test_the_writer_lock_is_re_entrant_in_a_thread_and_excludes_other_threads(tmp_path):
    import threading

    from goldenal.core.files import locked_directory

    outcome = []

    def other():
        try:
            with locked_directory(tmp_path, timeout=0.2):
                outcome.append("locked")
        except OSError as exc:
            outcome.append(exc.strerror)
    with locked_directory(tmp_path):
        with locked_directory(tmp_path, timeout=0.0):      # no wait for itself
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        assert outcome == ["another writer has held the lock for 0.2 s"]
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert outcome[-1] == "locked"


def test_write_texts_atomic_refuses_a_file_changed_since_it_was_read(tmp_path):
    from goldenal.core.errors import ConflictError
    from goldenal.core.files import write_texts_atomic

    a, b, new = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "new.env"
    a.write_text("a read\n")
    b.write_text("b changed by someone else\n")
    with pytest.raises(ConflictError, match=r"b\.yaml: changed since it was read \(another "
                                            r"writer\); nothing written: run again"):
        write_texts_atomic({a: "a new\n", b: "b new\n", new: "X=1\n"},
                           expected={a: "a read\n", b: "b read\n", new: ""})
    assert (a.read_text(), b.read_text(), new.exists()) == \
        ("a read\n", "b changed by someone else\n", False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "b.yaml"]
    # a file that grew past what was read is a change too; an empty file where none
    # was read holds what was read (nothing), so nothing is lost by writing it
    with pytest.raises(ConflictError, match="a.yaml"):
        write_texts_atomic({a: "x\n"}, expected={a: "a"})
    new.write_text("")
    write_texts_atomic({a: "a new\n", new: "X=1\n"}, expected={a: "a read\n", new: ""})
    assert (a.read_text(), new.read_text()) == ("a new\n", "X=1\n")
