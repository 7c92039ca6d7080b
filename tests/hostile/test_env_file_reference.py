"""An env file named by a config (``# env-file: PATH``) stays in the config's directory.

A TensorRT-LLM extra-LLM-API YAML (the shape of tests/data/inject/trtllm_extra.yaml)
names the ``KEY=value`` file that carries its knob; inject appends to it and
the read-back reads it.  A comment naming ``../home/.bashrc`` got appended to,
and ``/dev/zero`` exhausted memory: now each is a one-line refusal at the
comment's line, and nothing anywhere changes.
"""

import os

import pytest

from goldenal.engines import read_settings
from goldenal.core.errors import ParseError
from goldenal.recipes.env import ENV_FILE_LIMIT
from goldenal.apply.inject import inject
from hostile.hostile_support import run_goldenal, snapshot

EXTRA = """\
# extra-llm-api options for trtllm-serve
# env-file: {ref}
speculative_config:
    decoding_type: Eagle3
    max_draft_len: 3
    speculative_model: /models/Inferact/MiniMax-M3-EAGLE3-GQA
kv_cache_config:
    free_gpu_memory_fraction: 0.8
"""
ENV = "MODEL=nvidia/MiniMax-M3-NVFP4\nTLLM_LOG_LEVEL=INFO\n"
KNOB_LINE = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78\n"


@pytest.fixture
def tree(tmp_path):
    """``home/.bashrc`` beside ``recipes/``, where the config lives."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".bashrc").write_text("alias ll='ls -l'\n")
    (tmp_path / "recipes").mkdir()
    return tmp_path


def _config(tree, ref):
    path = tree / "recipes" / "extra.yaml"
    path.write_text(EXTRA.format(ref=ref))
    return path



def test_a_reference_leading_out_with_dotdot_is_refused_and_nothing_is_appended(tree):
    _config(tree, "../home/.bashrc")
    before = snapshot(tree)
    rc, out, err = run_goldenal("inject", "recipes/extra.yaml", "--thinking", "on", cwd=tree)
    assert (rc, out, err) == (
        2, "", "error: recipes/extra.yaml:2: env-file ../home/.bashrc leads outside the "
               "config's directory (recipes); name a file inside it\n")
    assert snapshot(tree) == before


def test_an_absolute_reference_is_refused_before_reading_dev_zero(tree):
    _config(tree, "/dev/zero")
    rc, out, err = run_goldenal("inject", "recipes/extra.yaml", "--thinking", "on", cwd=tree)
    assert (rc, err) == (2, "error: recipes/extra.yaml:2: env-file /dev/zero is an absolute "
                            "path; name a file in the config's directory (recipes)\n")


@pytest.mark.parametrize("target", ["../home/.bashrc", "/dev/zero"])
def test_a_symbolic_link_leading_out_is_refused(tree, target):
    os.symlink(target, tree / "recipes" / "extra.env")
    _config(tree, "extra.env")
    before = snapshot(tree / "home")
    rc, out, err = run_goldenal("inject", "recipes/extra.yaml", "--thinking", "on", cwd=tree)
    assert (rc, err) == (2, "error: recipes/extra.yaml:2: env-file extra.env leads through a "
                            "symbolic link outside the config's directory (recipes); name a "
                            "file inside it\n")
    assert snapshot(tree / "home") == before
    # the read-back refuses it the same way (it used to read through the link)
    with pytest.raises(ParseError, match="leads through a symbolic link outside"):
        read_settings(tree / "recipes" / "extra.yaml")


def test_a_linked_directory_leading_out_is_refused(tree):
    os.symlink("../home", tree / "recipes" / "conf")
    _config(tree, "conf/.bashrc")
    with pytest.raises(ParseError) as info:
        inject(tree / "recipes" / "extra.yaml", thinking="on")
    assert (info.value.line, info.value.message) == (
        2, "env-file conf/.bashrc leads through a symbolic link outside the config's "
           f"directory ({tree / 'recipes'}); name a file inside it")
    assert (tree / "home" / ".bashrc").read_text() == "alias ll='ls -l'\n"


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tree):
    os.mkfifo(tree / "recipes" / "extra.env")
    _config(tree, "extra.env")
    rc, out, err = run_goldenal("inject", "recipes/extra.yaml", "--thinking", "on", cwd=tree)
    assert (rc, err) == (2, "error: recipes/extra.yaml:2: env-file recipes/extra.env is a "
                            "device, pipe or socket, not a regular file\n")


def test_an_oversized_env_file_is_refused_and_one_at_the_limit_is_written(tree):
    env = tree / "recipes" / "extra.env"
    path = _config(tree, "extra.env")
    filler = "# " + "x" * (ENV_FILE_LIMIT - len(ENV) - 3) + "\n"
    env.write_text(ENV + filler + "Z")         # one byte over 1 MiB
    assert env.stat().st_size == ENV_FILE_LIMIT + 1
    with pytest.raises(ParseError) as info:
        inject(path, thinking="on")
    assert str(info.value) == f"{path}:2: env-file {env} is larger than 1 MiB"
    env.write_text(ENV + filler)               # exactly 1 MiB
    assert env.stat().st_size == ENV_FILE_LIMIT
    result = inject(path, thinking="on")
    assert result.written and env.read_text().endswith(KNOB_LINE)


def test_dotdot_that_stays_inside_and_a_link_inside_are_followed(tree):
    (tree / "recipes" / "env").mkdir()
    (tree / "recipes" / "env" / "b300.env").write_text(ENV)
    os.symlink("env/b300.env", tree / "recipes" / "current.env")
    path = _config(tree, "env/../current.env")
    result = inject(path, thinking="on")
    assert result.files == (os.path.join(str(tree / "recipes"), "env/../current.env"),)
    assert os.path.islink(tree / "recipes" / "current.env")     # written through the link
    assert (tree / "recipes" / "env" / "b300.env").read_text() == ENV + KNOB_LINE
    (setting,) = read_settings(path)
    assert (setting.knob, setting.value, setting.line) == (
        "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "1.78", 3)


def test_a_missing_env_file_inside_is_created(tree):
    path = _config(tree, "extra.env")
    inject(path, thinking="on")
    assert (tree / "recipes" / "extra.env").read_text() == KNOB_LINE


def test_an_env_file_given_on_the_command_line_must_be_a_regular_file(tree):
    _config(tree, "extra.env")
    rc, out, err = run_goldenal("inject", "recipes/extra.yaml", "--thinking", "on", "--env-file",
                        "/dev/zero", cwd=tree)
    assert (rc, err) == (2, "error: /dev/zero: is a device, pipe or socket, not a regular "
                            "file\n")


@pytest.mark.parametrize("make", ["fifo", "device", "directory"])
def test_a_config_that_is_no_regular_file_is_refused_at_once(tree, make):
    """inject (and its runner mode, given CONFIG_FILE) reads a config as it reads an env file."""
    target = {"fifo": "recipes/extra.yaml", "device": "/dev/zero", "directory": "recipes"}[make]
    if make == "fifo":
        os.mkfifo(tree / target)
    rc, out, err = run_goldenal("inject", target, "--thinking", "on", cwd=tree)
    kind = "a directory" if make == "directory" else "a device, pipe or socket"
    assert (rc, out, err) == (2, "", f"error: {target}: is {kind}, not a regular file\n")
    # the read-back of a YAML config and of a launcher refuses it alike
    for name in ("x.yaml", "x.sh"):
        os.symlink(target if os.path.isabs(target) else tree / target, tree / name)
        with pytest.raises(OSError, match="not a regular file"):
            read_settings(tree / name)
