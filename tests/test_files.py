"""Atomic writes: all or nothing, permissions kept."""

import os
import stat

import pytest

from goldenal.files import atomic_open, write_text_atomic


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
