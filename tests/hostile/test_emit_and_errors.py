"""Fragments are quoted for the shell that runs them; every error names its file."""

import errno
import os
import shlex
import subprocess

import pytest

from goldenal.core import files as _files
from goldenal.apply.emit import emit

# a draft head under a local path (allowed: it ends in the HF id) with shell metacharacters
ODD = "/models/it's a $HOME `x`/Inferact/MiniMax-M3-EAGLE3"
SPEC = '{"method": "eagle3", "model": "%s", "num_speculative_tokens": 3}' % ODD


@pytest.mark.parametrize("fmt", ["shell", "env", "args"])
def test_vllm_spec_config_with_shell_metacharacters_round_trips_through_bash(fmt):
    text = emit("minimax-m3", engine="vllm", k=3, thinking="on",
                draft="Inferact/MiniMax-M3-EAGLE3", format=fmt, spec_config=SPEC).text
    if fmt == "args":
        words = shlex.split(text)
        assert words[0] == "--speculative-config"
        body = words[1]
    else:
        script = ("set -eu\n" + (text if fmt == "shell" else "export " + text)
                  + '\nprintf %s "$SPEC_CONFIG"')
        body = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                              check=True, env={"PATH": os.environ["PATH"]}).stdout
    assert ODD in body
    assert '"synthetic_acceptance_length":2.83' in body.replace(" ", "")
    assert "''" not in text  # no YAML-style doubling in shell text


@pytest.mark.parametrize("engine,expect", [
    ("sglang", "SGLANG_SIMULATE_ACC_LEN=2.83"),
    ("trtllm", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.83"),
    ("atom", "--spec-decode-acceptance-length 2.83"),
])
def test_other_engines_shell_fragments_evaluate_in_bash(engine, expect):
    text = emit("minimax-m3", engine=engine, k=3, thinking="on",
                draft="Inferact/MiniMax-M3-EAGLE3", format="shell").text
    out = subprocess.run(["bash", "-c", "set -eu\n" + text + "\nenv"], capture_output=True,
                         text=True, check=True, env={"PATH": os.environ["PATH"]}).stdout
    assert expect in out or f"SPEC_DECODE_ARGS={expect}" in out


def test_a_full_disk_names_the_file(tmp_path, monkeypatch, run_cli):
    """`error: : No space left on device` named nothing; now the file written."""
    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    target = tmp_path / "profile.json"
    monkeypatch.setattr(_files.os, "fsync", no_space)
    with pytest.raises(OSError) as info:
        with _files.atomic_open(target) as fh:
            fh.write("x")
    assert str(info.value) == f"[Errno {errno.ENOSPC}] No space left on device: '{target}'"
    assert os.listdir(tmp_path) == []


def test_cli_error_without_a_file_name_has_no_empty_prefix(monkeypatch, run_cli):
    from goldenal.commands import list_curves

    def fail(args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(list_curves, "run", fail)
    code, out, err = run_cli("list")
    assert (code, out) == (2, "")
    assert err == "error: <stdout>: No space left on device\n"
