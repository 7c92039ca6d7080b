"""`goldenal lookup` and `goldenal.lookup`: the contract recipe scripts rely on."""

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import goldenal
from goldenal.core.errors import PolicyError, UnknownCurve, UsageError
from conftest import PACKAGED, REFERENCE_GOLDEN, goldenal_cmd, published_cells

CELLS = published_cells()

def test_the_packaged_directory_holds_all_112_published_cells():
    assert len(CELLS) == 112
    assert len({c[0] for c in CELLS}) == 9


def test_packaged_values_equal_the_published_upstream_values():
    assert sorted(published_cells(REFERENCE_GOLDEN)) == sorted(CELLS)


def _lookup_many(argv_list, **kwargs):
    """Run one interpreter that calls the CLI for many cells (a subprocess per cell is slow)."""
    code = ("import sys, json\nfrom goldenal.cli import main\n"
            "for argv in json.loads(sys.stdin.read()):\n"
            "    rc = main(argv)\n    print('rc=%d' % rc, flush=True)\n")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(argv_list),
                          capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    return list(zip(lines[0::2], lines[1::2]))


def test_every_published_cell_looks_up_to_its_committed_string(tmp_path):
    argvs = [["lookup", "--curve", c, "--k", str(k), "--thinking", t] for c, t, k, _ in CELLS]
    results = _lookup_many(argvs, cwd=tmp_path)  # any directory: curves ship in the package
    assert results == [(v, "rc=0") for *_, v in CELLS]


def test_every_published_cell_looks_up_from_an_upstream_directory_as_it_is(tmp_path):
    argvs = [["lookup", "--golden-dir", str(REFERENCE_GOLDEN), "--curve", c, "--k", str(k),
              "--thinking", t] for c, t, k, _ in CELLS]
    assert _lookup_many(argvs, cwd=tmp_path) == [(v, "rc=0") for *_, v in CELLS]


def test_console_script_prints_the_bare_value(tmp_path):
    proc = subprocess.run(goldenal_cmd() + ["lookup", "minimax-m3", "--draft",
                                            "Inferact/MiniMax-M3-EAGLE3", "--k", "3",
                                            "--thinking", "on"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "2.83\n", "")


@pytest.mark.parametrize("argv, expected", [
    (["minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3", "--k", "3", "--thinking", "on"],
     "2.83"),
    (["minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA", "--k", "3", "--thinking", "on"],
     "2.78"),
    (["MiniMax-M3", "--draft", "/models/MiniMax-M3-EAGLE3-GQA", "--k", "3", "--thinking", "on"],
     "2.78"),
    (["MiniMax-M3", "--draft", "MiniMax-M3-EAGLE3-GQA/", "--k", "3", "--thinking", "on"], "2.78"),
    (["MiniMax-M3", "--draft", "./heads/MiniMax-M3-EAGLE3", "--k", "3", "--thinking", "on"],
     "2.83"),
    (["nvidia/MiniMax-M3-NVFP4", "--draft", "inferact/minimax-m3-eagle3", "--k", "3",
      "--thinking", "off"], "2.93"),
    (["qwen3.5", "--k", "3", "--thinking", "on"], "3.39"),
    (["nvidia/Qwen3.5-397B-A17B-NVFP4", "--k", "8", "--thinking", "off"], "4.71"),
    (["/data/models/Qwen3.5-397B-A17B-FP8", "--k", "2", "--thinking", "off"], "2.70"),
    (["dsv4", "--k", "4", "--thinking", "off"], "3.00"),
    (["dsv4dsparkprob", "--k", "8", "--thinking", "on"], "3.47"),
    (["glm5.2", "--k", "2", "--thinking", "on"], "2.50"),
    (["kimi-k3", "--variant", "none", "--k", "3", "--thinking", "on"], "2.87"),
    (["kimik3", "--variant", "draft_sample_method=probabilistic", "--variant",
      "rejection_sample_method=block", "--k", "3", "--thinking", "on"], "3.00"),
    (["--curve", "minimaxm3_eagle3_gqa", "--k", "3", "--thinking", "on", "--engine", "trtllm"],
     "1.78"),
    (["qwen3.5", "--k", "3", "--thinking", "on", "--engine", "trtllm"], "2.39"),
    (["qwen3.5", "--k", "1", "--thinking", "on", "--engine", "trtllm"], "0.93"),
    (["qwen3.5", "--k", "3", "--thinking", "on", "--engine", "sglang"], "3.39"),
    (["qwen3.5", "--k", "3", "--thinking", "on", "--format", "env", "--engine", "sglang"],
     "SGLANG_SIMULATE_ACC_LEN=3.39"),
    (["minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3", "--k", "3", "--thinking", "on",
      "--format", "env", "--engine", "trtllm"], "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.83"),
    (["qwen3.5", "--k", "3", "--thinking", "on", "--format", "env"],
     "SYNTHETIC_ACCEPTANCE_LENGTH=3.39"),
])
def test_lookup_prints_the_exact_value(run_cli, argv, expected):
    assert run_cli("lookup", *argv) == (0, expected + "\n", "")


def test_json_output_carries_identity_and_provenance(run_cli):
    code, out, err = run_cli("lookup", "minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA",
                             "--k", "3", "--thinking", "on", "--format", "json",
                             "--engine", "trtllm")
    data = json.loads(out)
    assert code == 0 and err == ""
    assert data["value"] == "1.78" and data["al"] == "2.78"
    assert data["knob"] == "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
    assert data["curve"] == "minimaxm3_eagle3_gqa"
    assert data["draft"] == ["Inferact/MiniMax-M3-EAGLE3-GQA"]
    assert (data["thinking"], data["k"], data["method"]) == ("on", 3, "eagle3")
    assert data["provenance"]["source_run"].endswith("/actions/runs/29784780049")
    assert data["provenance"]["sampling"]["thinking_on"] == {
        "temperature": 1.0, "top_p": 0.95, "top_k": 40,
        "chat_template_kwargs": {"thinking_mode": "enabled"}}


REFUSALS = [
    (["minimax-m3", "--k", "3", "--thinking", "on"], 1,
     "error: 2 curves match model minimax-m3; the draft head (and variant) served decides which "
     "applies: --draft Inferact/MiniMax-M3-EAGLE3 for Inferact/MiniMax-M3-EAGLE3; "
     "--draft Inferact/MiniMax-M3-EAGLE3-GQA for Inferact/MiniMax-M3-EAGLE3-GQA"),
    (["kimi-k3", "--k", "3", "--thinking", "on"], 1,
     "error: 2 curves match model kimi-k3; the sampling variant served decides which applies: "
     "--variant none|probabilistic (probabilistic: draft_sample_method=probabilistic, "
     "rejection_sample_method=block)"),
    (["kimi-k3", "--variant", "greedy", "--k", "3", "--thinking", "on"], 1,
     "error: no curve for model kimi-k3 with variant greedy; committed: --variant "
     "none|probabilistic (probabilistic: draft_sample_method=probabilistic, "
     "rejection_sample_method=block)"),
    (["minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3-MLA", "--k", "3", "--thinking", "on"],
     1, "error: no curve for model minimax-m3 with draft 'Inferact/MiniMax-M3-EAGLE3-MLA'; "
        "committed: Inferact/MiniMax-M3-EAGLE3 (curve minimaxm3_eagle3); "
        "Inferact/MiniMax-M3-EAGLE3-GQA (curve minimaxm3_eagle3_gqa)"),
    (["qwen3.5", "--k", "9", "--thinking", "on"], 1,
     "error: no golden value for curve qwen3.5_mtp, thinking on, K=9; committed K: 1-8 "
     "(no interpolation or extrapolation)"),
    (["deepseek-v4-pro-0813", "--k", "3", "--thinking", "off"], 1,
     "error: curve dsv4-pro-0813-dspark has no thinking_off values (only thinking_on); "
     "there is no fallback to another thinking mode"),
    (["glm5.2", "--k", "3", "--thinking", "off"], 1,
     "error: curve glm5.2_mtp has no thinking_off values (only thinking_on); "
     "there is no fallback to another thinking mode"),
    (["--curve", "minimaxm3_eagle3", "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA", "--k", "3",
      "--thinking", "on"], 1,
     "error: curve minimaxm3_eagle3 was measured with Inferact/MiniMax-M3-EAGLE3, not draft "
     "'Inferact/MiniMax-M3-EAGLE3-GQA'; its value must not be served with that head"),
    (["--curve", "minimaxm3_eagle", "--k", "3", "--thinking", "on"], 1,
     "error: no curve 'minimaxm3_eagle'; did you mean minimaxm3_eagle3, minimaxm3_eagle3_gqa?"),
    (["qwen3.5", "--curve", "minimaxm3_eagle3", "--k", "3", "--thinking", "on"], 1,
     "error: curve minimaxm3_eagle3 is for model minimax-m3, not 'qwen3.5'"),
    (["qwen3.5", "--variant", "draft_sample_method", "--k", "3", "--thinking", "on"], 2,
     "error: `variant` entries are KEY=VALUE, a value alone or 'none', "
     "got 'draft_sample_method'"),
    (["--k", "3", "--thinking", "on"], 2, "error: give a MODEL or `--curve`"),
    # an HF id is matched exactly: another organisation's head of the same name is another head
    (["minimax-m3", "--draft", "Other/MiniMax-M3-EAGLE3", "--k", "3", "--thinking", "on"], 1,
     "error: no curve for model minimax-m3 with draft 'Other/MiniMax-M3-EAGLE3'; committed: "
     "Inferact/MiniMax-M3-EAGLE3 (curve minimaxm3_eagle3); Inferact/MiniMax-M3-EAGLE3-GQA "
     "(curve minimaxm3_eagle3_gqa)"),
]


@pytest.mark.parametrize("argv, code, message", REFUSALS)
def test_refusals_name_what_exists(run_cli, argv, code, message):
    rc, out, err = run_cli("lookup", *argv)
    assert (rc, out) == (code, "")
    assert err.startswith(message), err


def test_unknown_model_suggests_close_names(run_cli):
    rc, out, err = run_cli("lookup", "minimax-m2", "--k", "3", "--thinking", "on")
    assert (rc, out) == (1, "")
    assert err.startswith("error: no curve for model 'minimax-m2'; did you mean minimax-m3? "
                          "(models in ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("argv", [
    ["qwen3.5", "--k", "0", "--thinking", "on"],
    ["qwen3.5", "--k", "2.5", "--thinking", "on"],
    ["qwen3.5", "--k", "3", "--thinking", "maybe"],
    ["qwen3.5", "--thinking", "on"],
    ["qwen3.5", "--k", "3", "--thinking", "on", "--engine", "tgi"],
])
def test_usage_errors_exit_2(run_cli, argv):
    rc, out, err = run_cli("lookup", *argv)
    assert (rc, out) == (2, "")
    assert "error:" in err


def test_na_cell_is_refused(golden_copy, run_cli):
    path = golden_copy / "qwen3.5_mtp.yaml"
    path.write_text(path.read_text().replace("    3: 3.39", "    3: N/A"))
    rc, out, err = run_cli("lookup", "qwen3.5", "--k", "3", "--thinking", "on",
                           "--golden-dir", golden_copy)
    assert (rc, out) == (1, "")
    assert err == ("error: curve qwen3.5_mtp records thinking on, K=3 as N/A (failed "
                   "measurement); there is no golden value to serve\n")


def test_goldenal_dir_environment_variable(golden_copy, run_cli, monkeypatch):
    path = golden_copy / "qwen3.5_mtp.yaml"
    path.write_text(path.read_text().replace("    3: 3.39", "    3: 3.40"))
    monkeypatch.setenv("GOLDENAL_DIR", str(golden_copy))
    assert run_cli("lookup", "qwen3.5", "--k", "3", "--thinking", "on") == (0, "3.40\n", "")


def test_library_lookup_returns_a_value_object():
    value = goldenal.lookup("minimax-m3", k=3, thinking="on", draft="Inferact/MiniMax-M3-EAGLE3")
    assert str(value) == "2.83" and value.text == "2.83"
    assert value.value == 2.83 and float(value) == 2.83
    assert (value.curve, value.k, value.thinking) == ("minimaxm3_eagle3", 3, "on")
    assert value.engine_value("trtllm") == "1.83" and value.knob_value == "2.83"
    trt = goldenal.lookup("minimax-m3", k=3, thinking="on", draft="Inferact/MiniMax-M3-EAGLE3",
                          engine="trtllm")
    assert (str(trt), trt.knob_value) == ("2.83", "1.83")
    assert value.draft == ("Inferact/MiniMax-M3-EAGLE3",)
    assert repr(value) == "<GoldenValue 2.83: curve minimaxm3_eagle3, thinking on, K=3>"


def test_library_refusals_raise_domain_errors():
    with pytest.raises(PolicyError, match="2 curves match model minimax-m3"):
        goldenal.lookup("minimax-m3", k=3, thinking="on")
    with pytest.raises(UnknownCurve, match="no curve for model 'nope'"):
        goldenal.lookup("nope", k=3, thinking="on")
    with pytest.raises(UsageError, match="`k` must be a positive integer"):
        goldenal.lookup("qwen3.5", k=0, thinking="on")
    with pytest.raises(ValueError, match="`engine` must be one of"):
        goldenal.lookup("qwen3.5", k=3, thinking="on", engine="tgi")


def test_registry_to_frame_is_tidy():
    frame = goldenal.load_registry().to_frame()
    assert list(frame.columns) == ["curve", "model", "method", "head", "variant", "thinking",
                                   "k", "al", "al_text", "source"]
    assert len(frame) == 112
    row = frame[(frame.curve == "minimaxm3_eagle3_gqa") & (frame.thinking == "on") & (frame.k == 3)]
    assert row.al.item() == 2.78 and row["head"].item() == "Inferact/MiniMax-M3-EAGLE3-GQA"


@pytest.mark.parametrize("engine", [[], ["--engine", "trtllm"]])
def test_lookup_path_imports_nothing_heavy(tmp_path, engine):
    """Regression (``--engine``): converting the AL imported the recipe reader, and YAML."""
    code = ("import sys\nfrom goldenal.cli import main\n"
            f"rc = main(['lookup', 'qwen3.5', '--k', '3', '--thinking', 'on', *{engine!r}])\n"
            "heavy = sorted(m for m in ('numpy', 'pandas', 'scipy', 'matplotlib', 'yaml', "
            "'ruamel', 'prometheus_client', 'dataclasses', 'httpx', 'tqdm', 'asyncio', 'jsonschema') "
            "if m in sys.modules)\n"
            "print(rc, heavy)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.stdout.splitlines()[-1] == "0 []", proc.stderr


def test_stale_index_is_never_served(golden_copy, run_cli):
    """A hand edit after the index was built is seen: the index's checksums no longer match."""
    path = golden_copy / "qwen3.5_mtp.yaml"
    path.write_text(path.read_text().replace("    3: 3.39", "    3: 3.38"))
    assert run_cli("lookup", "qwen3.5", "--k", "3", "--thinking", "on",
                   "--golden-dir", golden_copy) == (0, "3.38\n", "")


def test_packaged_index_is_current():
    from goldenal.golden.registry import _read_index

    assert _read_index(str(PACKAGED)) is not None, "run `goldenal index golden_al_distribution`"


@pytest.mark.parametrize("variant, value", [("none", "2.87"), ("probabilistic", "3.00"),
                                            ("block", "3.00"), ("PROBABILISTIC", "3.00")])
def test_a_variant_may_be_named_by_its_value_alone(run_cli, variant, value):
    code, out, err = run_cli("lookup", "kimi-k3", "--variant", variant, "--k", "3",
                             "--thinking", "on")
    assert (code, out, err) == (0, value + "\n", "")
    assert str(goldenal.lookup("kimi-k3", k=3, thinking="on", variant=variant)) == value


def test_a_value_alone_still_picks_exactly_one_curve():
    # the key named in full must still match; a value alone names no curve without it
    with pytest.raises(UnknownCurve, match="with variant draft_sample_method=block, probabilistic"):
        goldenal.lookup("kimi-k3", k=3, thinking="on",
                        variant=["probabilistic", "draft_sample_method=block"])
    assert str(goldenal.lookup("kimi-k3", k=3, thinking="on",
                               variant=["probabilistic", "rejection_sample_method=block"])) == \
        "3.00"


def test_a_golden_value_equals_the_number_it_holds():
    mha = goldenal.lookup("minimax-m3", k=3, thinking="on", draft="Inferact/MiniMax-M3-EAGLE3")
    gqa = goldenal.lookup("minimax-m3", k=3, thinking="on",
                          draft="Inferact/MiniMax-M3-EAGLE3-GQA")
    assert mha == 2.83 and 2.83 == mha and not mha != 2.83
    assert mha != 2.84 and mha != gqa and gqa == 2.78
    assert gqa < mha and mha > gqa and mha <= 2.83 <= mha and 2 < mha < 3
    assert sorted([3, mha, 1.5, gqa]) == [1.5, 2.78, 2.83, 3]
    assert hash(mha) == hash(2.83) and {2.83: "MHA"}[mha] == "MHA"
    same = goldenal.lookup(curve="minimaxm3_eagle3", k=3, thinking="on")
    assert len({mha, 2.83, same}) == 1
    # what float itself would say: no number from a string, a Decimal compared exactly
    assert mha != "2.83" and mha != None  # noqa: E711
    from decimal import Decimal

    assert (mha == Decimal("2.83")) == (2.83 == Decimal("2.83"))
    with pytest.raises(TypeError):
        mha < "3"  # noqa: B015


@settings(max_examples=200, deadline=None)
@given(st.integers(100, 900), st.floats(allow_nan=True, allow_infinity=True) | st.integers())
def test_golden_value_compares_and_hashes_as_its_float(hundredths, other):
    from goldenal.golden.policy import GoldenValue
    from goldenal.golden.registry import load_registry

    curve = load_registry()["qwen3.5_mtp"]
    text = f"{hundredths / 100:.2f}"
    value = GoldenValue(text, k=3, thinking="on", curve=curve)
    number = float(text)
    for op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
        assert getattr(value, op)(other) == getattr(number, op)(other), op
    twin = GoldenValue(text, k=4, thinking="off", curve=curve)
    assert value == twin and hash(value) == hash(twin) == hash(number)
