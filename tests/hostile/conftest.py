"""Fixtures of the hostile-input suite."""

import pytest

from hostile.hostile_support import upstream


@pytest.fixture
def upstream_file(tmp_path):
    src = tmp_path / "upstream"
    src.mkdir()
    return lambda *a, **kw: upstream(src, *a, **kw)
