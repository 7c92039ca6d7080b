"""The README's console examples, run as a user runs them, must print what they show."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

BLOCKS = re.findall(r"```console\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def _examples():
    for block in BLOCKS:
        command, expected = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command:
                    yield command, "\n".join(expected)
                command, expected = line[2:], []
            else:
                expected.append(line)
        if command:
            yield command, "\n".join(expected)


EXAMPLES = list(_examples())


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A working directory laid out like a recipe repository."""
    root = tmp_path_factory.mktemp("readme")
    (root / "recipes").mkdir()
    shutil.copy(ROOT / "tests" / "data" / "inject" / "sglang_agg.yaml",
                root / "recipes" / "glm5.2-agg.yaml")
    shutil.copy(ROOT / "tests" / "data" / "audit" / "repo" / "benchmarks" / "multi_node" /
                "srt-slurm-recipes" / "vllm" / "minimax-m3" / "agentic" /
                "1p1d-tep4-tp4-c1-agentic.yaml", root / "recipes" / "minimax-m3-gqa-agentic.yaml")
    os.symlink(ROOT / "measurements", root / "measurements")
    return root


def test_readme_has_examples():
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("command, expected", EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_readme_example(scratch, command, expected):
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run(["bash", "-c", "{ " + command + "; } 2>&1"], cwd=scratch, env=env,
                          capture_output=True, text=True)
    assert proc.stdout.rstrip("\n") == expected


def test_quick_start_is_two_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start\n\n```bash\n(.*?)```", text, re.S).group(1)
    assert block.splitlines() == ["pip install . && goldenal list",
                                  "pip install '.[test]' && pytest"]
    assert "pip install '.[test]' && pytest" in (ROOT / ".ci" / "run").read_text()
