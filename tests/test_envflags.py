"""Boolean environment variables: one parser, and a bad spelling is a usage error.

Modelled on a runner exporting ``GOLDENAL_ALLOW_NON_AGENTIC=bogus``, which
used to be read as false without a word.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goldenal.core.envflags import RUNNER_SPELLINGS, SPELLINGS, env_flag
from goldenal.core.errors import PolicyError, UsageError
from goldenal.apply.inject import inject_runner

from conftest import goldenal_cmd

DATA = Path(__file__).parent / "data" / "inject"
ACCEPTED = "1, true, yes, on, 0, false, no, off (or leave it unset)"


@pytest.mark.parametrize("raw, value", [
    ("1", True), ("true", True), (" Yes ", True), ("ON", True),
    ("0", False), ("False", False), ("no", False), ("off\n", False), ("", False), ("  ", False),
])
def test_recognised_spellings(raw, value):
    assert env_flag({"X": raw}, "X") is value


def test_unset_is_the_default():
    assert env_flag({}, "X") is False
    assert env_flag({}, "X", default=True) is True
    assert env_flag({"X": ""}, "X", default=True) is True


def test_a_bogus_value_names_the_variable_and_the_spellings():
    with pytest.raises(UsageError) as exc:
        env_flag({"GOLDENAL_ALLOW_NON_AGENTIC": "bogus"}, "GOLDENAL_ALLOW_NON_AGENTIC")
    assert str(exc.value) == f"GOLDENAL_ALLOW_NON_AGENTIC='bogus' is not a boolean; use one of {ACCEPTED}"
    assert exc.value.exit_code == 2


def test_runner_switches_take_the_runners_spellings():
    assert env_flag({"EVAL_ONLY": "TRUE"}, "EVAL_ONLY", spellings=RUNNER_SPELLINGS) is True
    with pytest.raises(UsageError, match=r"^EVAL_ONLY='1' is not a boolean; use one of true, "
                                         r"false \(or leave it unset\)$"):
        env_flag({"EVAL_ONLY": "1"}, "EVAL_ONLY", spellings=RUNNER_SPELLINGS)


@given(st.text(max_size=12))
def test_any_value_is_a_spelling_or_a_usage_error(raw):
    words = raw.strip().lower()
    try:
        value = env_flag({"X": raw}, "X")
    except UsageError:
        assert words and words not in SPELLINGS[0] + SPELLINGS[1]
    else:
        assert value is (words in SPELLINGS[0])


def _run(args, **env):
    full = {**os.environ, **env}
    full.pop("GOLDENAL_DIR", None)
    return subprocess.run([*goldenal_cmd(), *args], capture_output=True, text=True, env=full)


def test_inject_refuses_a_bogus_allow_non_agentic(tmp_path):
    path = tmp_path / "sglang_agg.yaml"
    shutil.copy(DATA / "sglang_agg.yaml", path)
    for args in (["--thinking", "on"], ["--thinking", "on", "--allow-non-agentic"],
                 ["--framework", "dynamo-sglang"]):
        proc = _run(["inject", str(path), *args], GOLDENAL_ALLOW_NON_AGENTIC="bogus",
                    SYNTHETIC_ACCEPTANCE="true", THINKING_MODE="thinking_on", EVAL_ONLY="")
        assert (proc.returncode, proc.stdout) == (2, ""), args
        assert proc.stderr == ("error: GOLDENAL_ALLOW_NON_AGENTIC='bogus' is not a boolean; "
                               f"use one of {ACCEPTED}\n"), args
        assert path.read_bytes() == (DATA / "sglang_agg.yaml").read_bytes()


def test_runner_mode_refuses_a_bogus_eval_only(tmp_path):
    path = tmp_path / "sglang_agg.yaml"
    shutil.copy(DATA / "sglang_agg.yaml", path)
    proc = _run(["inject", str(path), "--framework", "dynamo-sglang"], EVAL_ONLY="yes",
                SYNTHETIC_ACCEPTANCE="true", THINKING_MODE="thinking_on")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("error: EVAL_ONLY='yes' is not a boolean; use one of true, false "
                           "(or leave it unset)\n")
    assert path.read_bytes() == (DATA / "sglang_agg.yaml").read_bytes()
    with pytest.raises(UsageError, match="^SYNTHETIC_ACCEPTANCE='on' is not a boolean"):
        inject_runner(path, "dynamo-sglang", environ={"SYNTHETIC_ACCEPTANCE": "on"})


def test_the_fixed_length_override_spellings_in_the_environment(tmp_path):
    # (the test's name keeps "agentic" out of the temporary path)
    folder = tmp_path / "dsv4_8k1k"
    folder.mkdir()
    path = folder / "recipe.yaml"
    path.write_text((DATA / "vllm_disagg.yaml").read_text().replace("agentic-mtp", "mtp"))
    env = {"SYNTHETIC_ACCEPTANCE": "true", "THINKING_MODE": "thinking_on"}
    for off in ("0", "off", ""):
        with pytest.raises(PolicyError, match="pass --allow-non-agentic or set "
                                              "GOLDENAL_ALLOW_NON_AGENTIC=true"):
            inject_runner(path, "dynamo-vllm", environ={**env, "GOLDENAL_ALLOW_NON_AGENTIC": off})
    outcome = inject_runner(path, "dynamo-vllm", environ={**env, "GOLDENAL_ALLOW_NON_AGENTIC": "On"})
    assert outcome.result.changed == 2


def test_a_bogus_debug_switch_is_a_usage_error():
    proc = _run(["list"], GOLDENAL_DEBUG="verbose")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"error: GOLDENAL_DEBUG='verbose' is not a boolean; use one of {ACCEPTED}\n"
    assert _run(["list"], GOLDENAL_DEBUG="0").returncode == 0
