"""`goldenal emit` and `goldenal.apply.emit.emit`: one engine's fragment for one cell."""

import json

import pytest

from goldenal.apply.emit import emit
from goldenal.core.errors import PolicyError, UsageError
from goldenal.golden.registry import load_registry

MINIMAX = ["minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3", "--k", "3", "--thinking", "on"]


@pytest.mark.parametrize("engine,fmt,expected", [
    ("trtllm", "shell", "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.83\n"),
    ("trtllm", "env", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.83\n"),
    ("trtllm", "yaml", 'TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "1.83"\n'),
    ("sglang", "yaml", 'SGLANG_SIMULATE_ACC_LEN: "2.83"\nSGLANG_SIMULATE_ACC_METHOD: '
                       '"match-expected"\nSGLANG_SIMULATE_ACC_TOKEN_MODE: "real-draft-token"\n'),
    ("sglang", "env", "SGLANG_SIMULATE_ACC_LEN=2.83\nSGLANG_SIMULATE_ACC_METHOD=match-expected\n"
                      "SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token\n"),
    ("atom", "args", "--spec-decode-acceptance-length 2.83\n"),
    ("vllm", "json", '{"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.83}\n'),
    ("vllm", "yaml", "speculative-config: '{\"rejection_sample_method\":\"synthetic\","
                     "\"synthetic_acceptance_length\":2.83}'\n"),
])
def test_cli_prints_the_fragment(run_cli, engine, fmt, expected):
    code, out, err = run_cli("emit", *MINIMAX, "--engine", engine, "--format", fmt)
    assert (code, out, err) == (0, expected, "")


def test_vllm_json_merges_the_rest_of_the_spec_config(run_cli):
    code, out, err = run_cli("emit", "dsv4", "--k", "3", "--thinking", "on", "--engine", "vllm",
                             "--format", "json", "--spec-config",
                             '{"method":"mtp","num_speculative_tokens":3}')
    assert code == 0, err
    assert out == ('{"method":"mtp","num_speculative_tokens":3,"rejection_sample_method":'
                   '"synthetic","synthetic_acceptance_length":2.49}\n')


def test_vllm_distribution(run_cli):
    code, out, err = run_cli("emit", *MINIMAX, "--engine", "vllm", "--distribution",
                             "--format", "args", "--spec-config",
                             '{"method": "eagle3", "model": "Inferact/MiniMax-M3-EAGLE3", '
                             '"num_speculative_tokens": 3}')
    assert code == 0, err
    assert out == ("--speculative-config '{\"method\": \"eagle3\", \"model\": "
                   "\"Inferact/MiniMax-M3-EAGLE3\", \"num_speculative_tokens\": 3, "
                   "\"rejection_sample_method\": \"synthetic\", "
                   "\"synthetic_acceptance_rates\": [0.78, 0.6, 0.45]}'\n")


def test_atom_rate_form(run_cli):
    code, out, err = run_cli("emit", "glm5.2", "--k", "3", "--thinking", "on", "--engine", "atom",
                             "--rate", "--format", "args")
    assert (code, out) == (0, "--spec-decode-acceptance-rate 0.663333333333\n")


def test_refusals_are_one_line(run_cli):
    code, out, err = run_cli("emit", "minimax-m3", "--k", "3", "--thinking", "on",
                             "--engine", "vllm")
    assert code == 1 and out == ""
    assert err.startswith("error: 2 curves match model minimax-m3")
    assert err.count("\n") == 1
    code, out, err = run_cli("emit", "dsv4", "--k", "3", "--thinking", "on", "--engine", "vllm",
                             "--spec-config", '{"method":"mtp","num_speculative_tokens":2}')
    assert (code, err) == (1, "error: --spec-config has num_speculative_tokens 2, but --k is 3\n")
    code, out, err = run_cli("emit", "dsv4", "--k", "3", "--thinking", "on", "--engine", "vllm",
                             "--spec-config", '{"method":')
    assert code == 2 and err.startswith("error: speculative-config JSON does not parse")
    code, out, err = run_cli("emit", "dsv4", "--k", "3", "--thinking", "on", "--engine",
                             "sglang", "--distribution")
    assert (code, err) == (2, "error: `distribution` is for vLLM (synthetic_acceptance_rates) "
                           "and llama.cpp (--spec-synth-rates)\n")


def test_library_mirrors_the_cli_for_every_published_cell():
    reg = load_registry()
    n = 0
    for curve in reg:
        for mode, cells in curve.cells.items():
            for k, text in cells.items():
                for engine in ("vllm", "sglang", "trtllm", "atom"):
                    fragment = emit(curve=curve.id, engine=engine, k=k, thinking=mode)
                    assert fragment.al == text
                    assert fragment.value in fragment.text
                    n += 1
    assert n == 112 * 4
    fragment = emit(curve="minimaxm3_eagle3_gqa", engine="vllm", k=3, thinking="on",
                    format="json", distribution=True)
    assert fragment.rates == (0.79, 0.6, 0.39)
    assert json.loads(fragment.text)["synthetic_acceptance_rates"] == [0.79, 0.6, 0.39]
    with pytest.raises(PolicyError, match="no golden value"):
        emit(curve="dsv4_mtp", engine="vllm", k=9, thinking="on")
    with pytest.raises(UsageError):
        emit(curve="dsv4_mtp", engine="nope", k=3, thinking="on")
