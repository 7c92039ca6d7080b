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


# What a clone holds besides the sources: build and cache output, never copied.
_NOT_IN_A_CLONE = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "dist",
                                         ".pytest_cache", ".hypothesis", ".venv", "*.so")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A fresh copy of the clone, alone in an empty directory: the README runs there."""
    root = tmp_path_factory.mktemp("readme") / "goldenal"
    shutil.copytree(ROOT, root, ignore=_NOT_IN_A_CLONE)
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


def test_the_examples_the_readme_runs_are_in_the_repository():
    for command, _ in EXAMPLES:
        for word in command.split():
            if word.startswith("examples/") or word.startswith("measurements/"):
                assert (ROOT / word).exists(), word


def test_the_test_suite_reads_nothing_outside_the_repository():
    # a bare clone has no sibling directories; data the tests need is in tests/data/
    outside = ("ROOT.parent", "parents[2]", '"shared"')
    offenders = [p.name for p in (ROOT / "tests").glob("*.py") if p.name != "test_readme.py"
                 and any(s in p.read_text() for s in outside)]
    assert offenders == []


def test_license_file_is_the_apache_license_pyproject_declares():
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    text = (ROOT / "LICENSE").read_text()
    assert declared == "Apache-2.0"
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text


def test_performance_claims_name_the_benchmark_that_measures_them():
    text = " ".join((ROOT / "README.md").read_text().split())
    bench = (ROOT / "benchmarks" / "lookup_startup.py").read_text()
    assert "(target: at most 2.0x)" in text and "(target <= 2.00x)" in bench
    assert "`python benchmarks/lookup_startup.py`" in text
    assert "`python benchmarks/ingest_vs_grep.py --mb 100`" in text
    assert "about 1.3x a bare" not in text  # the old claim measured an editable install


def test_the_fast_suite_runs_before_the_end_to_end_tests():
    # a first `pytest` builds llama-server for tests/e2e/: the fast suite's failures come first
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "tests/e2e/test_llama_build.py", "tests/test_envflags.py"],
                          cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, GOLDENAL_SKIP_E2E="1"))
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    e2e = [i.startswith("tests/e2e/") for i in ids]
    assert True in e2e and False in e2e, proc.stdout
    assert e2e == sorted(e2e)  # every e2e test after every other one


def test_quick_start_states_the_one_time_build_cost():
    from e2e import llama_build

    text = " ".join((ROOT / "README.md").read_text().split())
    quick = text[text.index("## Quick start"):text.index("## What a golden curve is")]
    assert llama_build.COST in quick
    assert "[llama-server build]" in quick


def _measure_options(command):
    """The options of a `goldenal measure` command line (quoted values dropped first)."""
    bare = re.sub(r"\"[^\"]*\"|'[^']*'", " ", command)
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", bare))


def test_the_readme_measures_a_curve_with_the_command_make_sh_runs():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Measure a curve"):text.index("## `fit` after a measurement")]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    readme_cmd = block[block.index("goldenal measure"):block.index("\ngoldenal fit")]
    make = (ROOT / "measurements" / "llamacpp-tiny-random-2026-12" / "make.sh").read_text()
    start = make.index("\ngoldenal measure")  # the command, not the comment naming it
    make_cmd = make[start:make.index("\n\n", start)]
    assert "for k in" not in block and "for k in" not in make  # no hand-written K loop
    readme, script = _measure_options(readme_cmd), _measure_options(make_cmd)
    assert "--server-cmd" in readme and "--not-golden" in readme
    assert script - readme == {"--note"} and readme <= script
    # the example writes no committed curve
    fit = block[block.index("\ngoldenal fit"):]
    assert "golden_al_distribution" not in block and "--golden-dir runs/" in fit
