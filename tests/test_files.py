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


def _journal(directory, doc):
    import json

    from goldenal.core.files import JOURNAL_NAME

    (directory / JOURNAL_NAME).write_text(json.dumps(doc) + "\n")


def test_a_journal_left_by_a_killed_write_is_rolled_back(tmp_path):
    """Format 2: a write killed after its renames, before its commit, is undone whole."""
    from goldenal.core.files import locked_directory, pending_journal

    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        d.mkdir()
        (d / "recipe.sh").write_text("new\n")                  # renamed over the old one
        (d / ".goldenal-staged-0b.tmp").write_text("old\n")    # the old file, kept
    (one / "created.env").write_text("X=1\n")                  # made by the write
    (two / ".goldenal-staged-1a.tmp").write_text("never renamed\n")
    txn = "ab" * 16
    _journal(one, {"format": 2, "txn": txn, "others": ["../two"],
                   "moves": [[".goldenal-staged-0a.tmp", "recipe.sh", ".goldenal-staged-0b.tmp"],
                             [".goldenal-staged-0c.tmp", "created.env", None]]})
    _journal(two, {"format": 2, "txn": txn, "primary": "../one",
                   "moves": [[".goldenal-staged-1a.tmp", "recipe.sh", ".goldenal-staged-0b.tmp"]]})
    with locked_directory(one):
        pass
    assert sorted(os.listdir(one)) == ["recipe.sh"]
    assert sorted(os.listdir(two)) == ["recipe.sh"]
    assert (one / "recipe.sh").read_text() == "old\n"
    assert (two / "recipe.sh").read_text() == "new\n"      # its rename never happened
    assert not pending_journal(one) and not pending_journal(two)


def test_a_journal_whose_primary_is_gone_only_loses_its_backups(tmp_path):
    from goldenal.core.files import locked_directory

    (tmp_path / "primary").mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "recipe.sh").write_text("new\n")
    (other / ".goldenal-staged-0b.tmp").write_text("old\n")
    _journal(other, {"format": 2, "txn": "cd" * 16, "primary": "../primary",
                     "moves": [[".goldenal-staged-0a.tmp", "recipe.sh", ".goldenal-staged-0b.tmp"]]})
    with locked_directory(other):
        pass
    assert os.listdir(other) == ["recipe.sh"] and (other / "recipe.sh").read_text() == "new\n"


def test_a_redo_journal_of_earlier_releases_is_finished(tmp_path):
    """Format 1 was written once every new file was staged: its renames are replayed."""
    from goldenal.core.files import locked_directory

    (tmp_path / "manifest.yaml").write_text("old\n")
    (tmp_path / ".goldenal-staged-x1.tmp").write_text("new manifest\n")
    (tmp_path / "index.tsv").write_text("new index\n")           # renamed before the kill
    _journal(tmp_path, {"format": 1, "moves": [[".goldenal-staged-x1.tmp", "manifest.yaml"],
                                               [".goldenal-staged-x2.tmp", "index.tsv"]]})
    with locked_directory(tmp_path):
        pass
    assert sorted(os.listdir(tmp_path)) == ["index.tsv", "manifest.yaml"]
    assert (tmp_path / "manifest.yaml").read_text() == "new manifest\n"


@pytest.mark.parametrize("doc, why", [
    ({"format": 3, "moves": []}, "format 3, not one this goldenal knows"),
    ({"format": 2, "txn": "ab" * 16, "moves": [["../x", "a", None]]}, "not a plain file name"),
    ({"format": 2, "txn": "ab" * 16, "moves": [["a.tmp", "a", None]]}, "staged temporary"),
    ({"format": 2, "txn": "no", "moves": []}, "not a journal of goldenal's"),
])
def test_a_malformed_journal_is_refused_naming_it(tmp_path, doc, why):
    from goldenal.core.files import JOURNAL_NAME, locked_directory

    _journal(tmp_path, doc)
    with pytest.raises(OSError, match="malformed transaction journal") as info:
        with locked_directory(tmp_path):
            pass
    assert why in info.value.strerror and "restore the directory" in info.value.strerror
    assert info.value.filename == str(tmp_path / JOURNAL_NAME)


def test_one_writer_for_a_whole_directory_refuses_a_link(tmp_path):
    from goldenal.core.files import write_texts_atomic

    (tmp_path / "real.yaml").write_text("old\n")
    (tmp_path / "link.yaml").symlink_to("real.yaml")
    with pytest.raises(PermissionError, match="is a symbolic link; nothing written"):
        write_texts_atomic({tmp_path / "a.yaml": "a\n", tmp_path / "link.yaml": "x\n"},
                           links=False)
    assert sorted(os.listdir(tmp_path)) == ["link.yaml", "real.yaml"]
    write_texts_atomic({tmp_path / "link.yaml": b"through\n"})      # by default, through it
    assert (tmp_path / "real.yaml").read_bytes() == b"through\n"


def test_the_one_reader_is_bounded_and_never_blocks(tmp_path):
    import errno

    from goldenal.core.files import read_regular

    big = tmp_path / "big"
    big.write_bytes(b"x" * 11)
    assert read_regular(big, 11) == b"x" * 11
    with pytest.raises(OSError) as info:
        read_regular(big, 10)
    assert (info.value.errno, info.value.strerror, info.value.filename) == (
        errno.EFBIG, "is larger than 10 bytes", str(big))
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(tmp_path / "pipe")


def test_writing_nothing_writes_nothing(tmp_path):
    """An empty change is a no-op (it used to fail with IndexError)."""
    from goldenal.core.files import write_texts_atomic

    assert write_texts_atomic({}) == []
    assert list(tmp_path.iterdir()) == []
