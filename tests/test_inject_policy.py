"""inject, emit and audit hold the exact policy through one resolver (regression tests)."""

import shutil
from pathlib import Path

import pytest

from goldenal.core.errors import PolicyError, UnknownCurve
from goldenal.auditing.check import match_curve
from goldenal.auditing.recipe import recipe_configs
from goldenal.golden.registry import load_registry
from goldenal.apply.inject import inject

DATA = Path(__file__).parent / "data" / "inject"
POLICY_CASES = DATA / "policy"
PROB_BLOCK = "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method"


def _copy(tmp_path, name, src=POLICY_CASES):
    shutil.copy(src / name, tmp_path / name)
    return tmp_path / name


# ------------------------------------------------------------------ 1: one resolver

def test_dspark_on_a_model_with_only_an_mtp_curve_is_refused(tmp_path, run_cli):
    path = _copy(tmp_path, "dspark_dsv4.yaml")
    before = path.read_bytes()
    rc, out, err = run_cli("inject", path, "--thinking", "on")
    assert (rc, out) == (1, "")
    assert err == (f"error: {path}:7: no dspark curve for model deepseek-v4-pro; "
                   "committed: mtp (curve dsv4_mtp)\n")
    assert path.read_bytes() == before


def test_a_draft_sample_method_without_its_curve_is_refused(tmp_path, run_cli):
    path = _copy(tmp_path, "k25_prob.yaml")
    before = path.read_bytes()
    rc, out, err = run_cli("inject", path, "--thinking", "on")
    assert (rc, out) == (1, "")
    assert err == (f"error: {path}:7: no curve for model kimi-k2.5-nvfp4 with variant "
                   "draft_sample_method=probabilistic; committed: kimik2.5_eagle3: none\n")
    assert path.read_bytes() == before


def test_served_variant_maps_the_sampling_settings():
    from goldenal.golden.policy import REPLACED, served_variant

    assert served_variant() == {}
    assert served_variant("probabilistic", "standard") == {"draft_sample_method": "probabilistic"}
    assert served_variant(None, "strict") == {}
    assert served_variant("probabilistic", "block") == {
        "draft_sample_method": "probabilistic", "rejection_sample_method": "block"}
    assert served_variant("probabilistic", "synthetic") == {
        "draft_sample_method": "probabilistic", "rejection_sample_method": REPLACED}


@pytest.mark.parametrize("dsm, rsm, expected", [
    (None, None, "kimik3_dspark"),
    (None, "synthetic", "kimik3_dspark"),
    ("probabilistic", "block", PROB_BLOCK),
    ("probabilistic", "synthetic", PROB_BLOCK),
    ("probabilistic", None, UnknownCurve),        # no curve is exactly {probabilistic}
    ("probabilistic", "fly", UnknownCurve),
    (None, "block", UnknownCurve),
])
def test_resolver_needs_exactly_the_served_variant(dsm, rsm, expected):
    from goldenal.golden.policy import resolve_served

    registry = load_registry()
    kw = dict(models=("moonshotai/Kimi-K3",), draft="Inferact/Kimi-K3-DSpark", method="dspark",
              draft_sample_method=dsm, rejection_sample_method=rsm)
    if isinstance(expected, str):
        assert resolve_served(registry, **kw).id == expected
    else:
        with pytest.raises(expected):
            resolve_served(registry, **kw)


def test_resolver_refuses_another_method_and_another_head():
    from goldenal.golden.policy import resolve_served

    registry = load_registry()
    with pytest.raises(UnknownCurve, match="no dspark curve for model deepseek-v4-pro"):
        resolve_served(registry, models=("deepseek-ai/DeepSeek-V4-Pro",), method="dspark")
    with pytest.raises(UnknownCurve, match="with draft 'acme/MiniMax-M3-EAGLE3'"):
        resolve_served(registry, models=("minimaxm3",), method="eagle3",
                       draft="acme/MiniMax-M3-EAGLE3")
    # SGLang's EAGLE runs chain drafting: the MTP curve, never a DSpark one
    assert resolve_served(registry, models=("dsv4",), method="EAGLE").id == "dsv4_mtp"
    with pytest.raises(UnknownCurve, match="no EAGLE curve for model kimi-k3"):
        resolve_served(registry, models=("kimik3",), method="EAGLE")
    with pytest.raises(PolicyError, match="--curve kimik3_dspark contradicts the file"):
        resolve_served(registry, models=("kimik3",), method="dspark",
                       draft="Inferact/Kimi-K3-DSpark", draft_sample_method="probabilistic",
                       rejection_sample_method="synthetic", curve="kimik3_dspark")


RECIPES = ["vllm_disagg.yaml", "vllm_anchor.yaml", "vllm_agg_pinned.yaml", "sglang_agg.yaml",
           "sglang_variants.yaml", "sglang_pinned.yaml", "trtllm_disagg_anchor.yaml",
           "sglang_no_env.yaml", "sglang_override_k.yaml"]


@pytest.mark.parametrize("name", RECIPES)
def test_audit_and_inject_pick_the_same_curve_for_every_site(tmp_path, name):
    path = _copy(tmp_path, name, DATA)
    result = inject(path, thinking="on", force=True, allow_non_agentic=True)
    text = path.read_text()
    registry = load_registry()
    curves = list(registry)
    picked = set()
    for cfg in recipe_configs(name, text, text.split("\n")):
        if cfg.knob is None:
            continue
        curve, problem = match_curve(curves, cfg)
        assert problem is None, (cfg, problem)
        picked.add(curve.id)
    assert picked == {v.curve for v in result.values}


# ------------------------------------------------------------------ 12: emit --spec-config

PROB_SPEC = ('{"method":"dspark","model":"Inferact/Kimi-K3-DSpark","num_speculative_tokens":7,'
             '"draft_sample_method":"probabilistic"}')


def test_emit_spec_config_with_another_variant_is_refused(run_cli):
    rc, out, err = run_cli("emit", "kimik3", "--engine", "vllm", "--k", "7", "--thinking", "on",
                           "--curve", "kimik3_dspark", "--spec-config", PROB_SPEC)
    assert (rc, out) == (1, "")
    assert err == ("error: --spec-config does not serve curve kimik3_dspark: --curve "
                   "kimik3_dspark contradicts the file, which serves model kimi-k3, draft "
                   "Inferact/Kimi-K3-DSpark, method dspark, variant "
                   f"draft_sample_method=probabilistic ({PROB_BLOCK})\n")
    rc, out, err = run_cli("emit", "kimik3", "--engine", "vllm", "--k", "7", "--thinking", "on",
                           "--curve", PROB_BLOCK, "--spec-config", PROB_SPEC, "--format", "json")
    assert (rc, err) == (0, "")
    assert '"synthetic_acceptance_length":3.84' in out


def test_emit_spec_config_with_another_method_is_refused(run_cli):
    rc, out, err = run_cli("emit", "--engine", "vllm", "--k", "3", "--thinking", "on",
                           "--curve", "dsv4_mtp", "--spec-config",
                           '{"method":"dspark","num_speculative_tokens":3}')
    assert (rc, out) == (1, "")
    assert err == ("error: --spec-config does not serve curve dsv4_mtp: no dspark curve for "
                   "model deepseek-v4-pro; committed: mtp (curve dsv4_mtp)\n")


@pytest.mark.parametrize("k", ['"2"', "2.0", "true"])
def test_emit_spec_config_k_must_be_an_integer(run_cli, k):
    rc, out, err = run_cli("emit", "--engine", "vllm", "--k", "2", "--thinking", "on",
                           "--curve", "dsv4_mtp", "--spec-config",
                           '{"method":"mtp","num_speculative_tokens":%s}' % k)
    assert (rc, out) == (2, "")
    kind = {'"2"': "'2' (str)", "2.0": "2.0 (float)", "true": "True (bool)"}[k]
    assert err == f"error: --spec-config num_speculative_tokens must be an integer, got {kind}\n"


# ------------------------------------------------------------------ 3: one conversion

def test_trtllm_knob_for_al_one_is_refused_everywhere():
    from goldenal.engines import adapter, knob_value

    for convert in (lambda: knob_value("trtllm", "1.00"),
                    lambda: adapter("trtllm").convert("1.00")):
        with pytest.raises(PolicyError, match=r"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS="
                                              r"0\.00, which TensorRT-LLM reads as 'forcing off'"):
            convert()
    assert knob_value("trtllm", "1.01") == "0.01"
    assert knob_value("atom", "2.84", k=3, form="rate") == "0.613333333333"


def test_audit_expects_the_writers_rate_spelling():
    from goldenal.engines import adapter
    from goldenal.auditing import evidence as ev
    from goldenal.auditing.check import expected_knob

    cfg = ev.Config(path="x.sh", line=1, engine="atom", knob="--spec-decode-acceptance-rate",
                    value="0.6", k=3)
    assert expected_knob(cfg, "2.84") == adapter("atom").convert("2.84", k=3, form="rate") \
        == "0.613333333333"
    trt = ev.Config(path="x.yaml", line=1, engine="trtllm",
                    knob="TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", value="0", k=3)
    assert expected_knob(trt, "2.83") == "1.83"
    assert expected_knob(trt, "1.00") is None


# ------------------------------------------------------------------ 4: agentic configs only

def test_a_fixed_sequence_length_recipe_is_refused_unless_allowed(tmp_path, run_cli):
    from goldenal.auditing import audit

    folder = tmp_path / "benchmarks" / "multi_node" / "dsv4_8k1k"
    folder.mkdir(parents=True)
    path = _copy(folder, "vllm_disagg.yaml", DATA)
    # the recipe's own name would decide first; without it the directory does
    path.write_text(path.read_text().replace("vllm-agentic-mtp", "vllm-mtp", 1))
    before = path.read_bytes()
    rc, out, err = run_cli("inject", path, "--thinking", "on")
    assert (rc, out) == (1, "")
    assert err == (f"error: {path}: a fixed-sequence-length (non-agentic) config must measure "
                   "real acceptance; synthetic acceptance is for agentic configs only (pass "
                   "--allow-non-agentic or set GOLDENAL_ALLOW_NON_AGENTIC=true to write it "
                   "anyway)\n")
    assert path.read_bytes() == before
    rc, out, err = run_cli("inject", path, "--thinking", "on", "--allow-non-agentic")
    assert rc == 0 and path.read_bytes() != before
    # the audit's verdict on what was written is the same test
    assert {f.code for f in audit([str(tmp_path)])} >= {"GAL302"}


def test_the_recipe_name_decides_when_the_path_does_not(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text((DATA / "vllm_disagg.yaml").read_text().replace(
        "name: dsv4-gb200-vllm-agentic-mtp-disagg-1p1d", "name: dsv4-1k1k-disagg-mtp", 1))
    with pytest.raises(PolicyError, match=r"config \(recipe name dsv4-1k1k-disagg-mtp\) must "):
        inject(path, thinking="on")
    agentic = tmp_path / "agentic.yaml"
    agentic.write_text(path.read_text().replace("dsv4-1k1k", "dsv4-agentic"))
    assert inject(agentic, thinking="on").changed


# ------------------------------------------------------------------ 5: TensorRT-LLM two-model path

def test_trtllm_two_model_path_takes_an_integral_value_as_an_integer(tmp_path):
    path = _copy(tmp_path, "trtllm_agg.yaml", DATA)
    result = inject(path, al="3.00", force=True)
    assert result.values[0].knob_value == "2.00"
    assert "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: '2'\n" in path.read_text()
    with pytest.raises(PolicyError, match=r"with int\(\): 1.50 would silently disable forcing"):
        inject(path, al="2.50", force=True)


# ------------------------------------------------------------------ 6: byte-order mark

def test_a_byte_order_mark_is_kept_and_does_not_shift_the_splice(tmp_path, run_cli):
    import json

    import yaml

    path = _copy(tmp_path, "bom.yaml")
    source = path.read_bytes()
    assert source.startswith(b"\xef\xbb\xbf")
    rc, out, err = run_cli("inject", path, "--thinking", "on")
    assert rc == 0
    written = path.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf") and written.count(b"\xef\xbb\xbf") == 1
    spec = yaml.safe_load(written.decode("utf-8-sig"))["backend"]["vllm_config"]["aggregated"]
    assert json.loads(spec["speculative-config"]) == {
        "method": "eagle3", "model": "Inferact/MiniMax-M3-EAGLE3-GQA",
        "num_speculative_tokens": 3, "rejection_sample_method": "synthetic",
        "synthetic_acceptance_length": 2.78}
    assert written.replace(b',"rejection_sample_method":"synthetic",'
                           b'"synthetic_acceptance_length":2.78', b"") == source
    assert inject(path, thinking="on").changed == 0


# ------------------------------------------------------------------ 7: explicit AL values

RUNNER = {"SYNTHETIC_ACCEPTANCE": "true", "FRAMEWORK": "dynamo-vllm"}


@pytest.mark.parametrize("al", ["+2.5", "\uff12.\uff15", "2.5e0", "2.", ".5", "nan", "inf",
                                "2,5", "0x2", "2.5 3", ""])
def test_an_explicit_al_must_be_a_plain_decimal(tmp_path, al):
    from goldenal.core.errors import UsageError
    from goldenal.apply.inject import inject_runner

    path = _copy(tmp_path, "vllm_disagg.yaml", DATA)
    before = path.read_bytes()
    with pytest.raises(UsageError, match="must be a plain decimal such as 2.83"):
        inject(path, al=al)
    if al:
        with pytest.raises(UsageError, match="must be a plain decimal"):
            inject_runner(path, environ={**RUNNER, "SYNTHETIC_ACCEPTANCE_LENGTH": al})
    assert path.read_bytes() == before


def test_an_explicit_al_is_checked_against_k_and_written_as_given(tmp_path):
    path = _copy(tmp_path, "vllm_disagg.yaml", DATA)
    with pytest.raises(PolicyError, match=r"AL 4.01 is outside \[1, K\+1\] = \[1, 4\]"):
        inject(path, al="4.01")
    with pytest.raises(PolicyError, match=r"AL 0.99 is outside"):
        inject(path, al="0.99")
    result = inject(path, al=" 4 ", force=True)     # not the golden 2.49: forced
    assert {v.al for v in result.values} == {"4"}
    assert '"synthetic_acceptance_length":4}' in path.read_text()


# ------------------------------------------------------------------ 8: one YAML-error helper

def test_a_yaml_reader_error_is_one_line_with_its_line(tmp_path, run_cli):
    path = _copy(tmp_path, "ctrl.yaml")
    rc, out, err = run_cli("inject", path, "--thinking", "on")
    assert (rc, out) == (2, "")
    assert err == (f"error: {path}:5: not valid YAML: unacceptable character #x0001: "
                   "control characters are not allowed\n")


def test_every_yaml_reader_uses_the_one_helper(tmp_path):
    import yaml

    from goldenal.golden.curvefile import read_manifest
    from goldenal.core.errors import ParseError, yaml_error
    from goldenal.auditing import audit
    from goldenal.readers.run import load_run
    from goldenal.golden.registry import load_registry

    bad = "a: 1\nb: [\n"
    try:
        yaml.compose("a: 1\nb: \x01\n")
    except yaml.YAMLError as exc:
        err = yaml_error(exc, "x.yaml", text="a: 1\nb: \x01\n")
    assert str(err) == ("x.yaml:2: not valid YAML: unacceptable character #x0001: "
                        "special characters are not allowed")
    (tmp_path / "manifest.yaml").write_text(bad)
    with pytest.raises(ParseError) as info:
        read_manifest(str(tmp_path))
    assert str(info.value) == (f"{tmp_path}/manifest.yaml:3: manifest is not valid YAML: "
                               "did not find expected node content")
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.yaml").write_text("cells: \x01\n")
    with pytest.raises(ParseError) as info:
        load_run(run)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith(f"{run}/run.yaml")
    curves = tmp_path / "golden"
    shutil.copytree(Path(__file__).parents[1] / "golden_al_distribution", curves)
    (curves / "dsv4_mtp.yaml").write_text("deepseek-v4-pro:\n  thinking_on: \x01\n")
    with pytest.raises(ParseError) as info:
        load_registry(curves)
    assert "\n" not in str(info.value) and "control characters are not allowed" in str(info.value)
    agentic = tmp_path / "repo" / "agentic"
    agentic.mkdir(parents=True)
    shutil.copy(POLICY_CASES / "ctrl.yaml", agentic / "ctrl.yaml")
    (f,) = audit([str(tmp_path / "repo")])
    assert (f.code, f.line, f.message) == (
        "GAL306", 5, "cannot parse recipe: unacceptable character #x0001: control characters "
                     "are not allowed")


# ------------------------------------------------------------------ 9: writes

def test_a_symlink_is_written_through_to_its_target(tmp_path, run_cli):
    real = _copy(tmp_path, "vllm_agg_pinned.yaml", DATA)
    link = tmp_path / "link.yaml"
    link.symlink_to(real.name)
    rc, out, err = run_cli("inject", link, "--thinking", "on", "--force")
    assert rc == 0
    assert link.is_symlink() and link.resolve() == real
    assert real.read_bytes() == (DATA / "vllm_agg_pinned.expected.yaml").read_bytes()


def test_a_read_only_file_is_refused_and_left_alone(tmp_path, run_cli):
    import os

    path = _copy(tmp_path, "vllm_agg_pinned.yaml", DATA)
    os.chmod(path, 0o444)
    rc, out, err = run_cli("inject", path, "--thinking", "on", "--force")
    assert (rc, out) == (2, "")
    assert err == f"error: {path}: file is read-only; nothing written\n"
    assert path.read_bytes() == (DATA / "vllm_agg_pinned.yaml").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vllm_agg_pinned.yaml"]


def test_a_recipe_and_its_env_file_are_written_all_or_nothing(tmp_path):
    import os

    from goldenal.core.files import write_texts_atomic

    recipe = tmp_path / "extra.yaml"
    env = tmp_path / "extra.env"
    recipe.write_text("\ufeffspeculative_config: {}\n", encoding="utf-8")
    env.write_text("A=1\n")
    os.chmod(env, 0o444)
    texts = {str(recipe): "\ufeffspeculative_config: {x: 1}\n", str(env): "A=1\nB=2\n"}
    with pytest.raises(PermissionError, match="read-only"):
        write_texts_atomic(texts)
    assert recipe.read_text(encoding="utf-8") == "\ufeffspeculative_config: {}\n"
    assert env.read_text() == "A=1\n"
    os.chmod(env, 0o644)
    write_texts_atomic(texts)
    assert recipe.read_text(encoding="utf-8") == "\ufeffspeculative_config: {x: 1}\n"
    assert env.read_text() == "A=1\nB=2\n"


# ------------------------------------------------------------------ 2: ATOM launchers

def test_atom_knob_goes_to_the_benchmark_branch_never_the_eval_only_one(tmp_path, run_cli):
    from goldenal.auditing import audit

    path = _copy(tmp_path, "atom_eval_guard.sh")
    before = path.read_text()
    rc, out, err = run_cli("inject", path, "--thinking", "on", "--model", "glm5.2")
    assert rc == 0
    lines = path.read_text().split("\n")
    assert lines[13] == "        --num-speculative-tokens 3"                  # EVAL_ONLY=true
    assert lines[18] == ("        --num-speculative-tokens 3 "
                          "--spec-decode-acceptance-length 2.99")            # benchmark path
    assert path.read_text().replace(" --spec-decode-acceptance-length 2.99", "") == before
    assert inject(path, thinking="on", model="glm5.2").changed == 0
    # the audit reads the written file the same way: knob off the eval path, golden value
    agentic = tmp_path / "repo" / "agentic"
    agentic.mkdir(parents=True)
    shutil.copy(path, agentic / "glm5.2_fp4_mi355x_atom_mtp.sh")
    codes = {f.code for f in audit([str(tmp_path / "repo")])}
    assert not codes & {"GAL201", "GAL303", "GAL301", "GAL101", "GAL304"}


SCRIPT = """\
#!/usr/bin/env bash
MODEL=deepseek-ai/DeepSeek-V4-Pro
{prelude}
python -m atom.entrypoints.openai_server --model $MODEL --method mtp \\
  --num-speculative-tokens {k}
"""


def test_atom_unguarded_flag_in_a_file_with_an_eval_branch_is_refused(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(SCRIPT.format(prelude='if [ "$EVAL_ONLY" = "true" ]; then\n  echo eval\nfi',
                                  k="3"))
    with pytest.raises(PolicyError, match="runs on both the EVAL_ONLY=true path and the "
                                          "benchmark path"):
        inject(path, thinking="on")


def test_atom_every_benchmark_path_gets_its_own_cell(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(
        "#!/usr/bin/env bash\nMODEL=deepseek-ai/DeepSeek-V4-Pro\n"
        'if [ "$CONC" -gt 8 ]; then\n'
        "  atom_serve --model $MODEL --method mtp --num-speculative-tokens 2\n"
        "else\n"
        "  atom_serve --model $MODEL --method mtp --num-speculative-tokens 3\n"
        "fi\n")
    result = inject(path, thinking="on")
    assert [(v.k, v.al) for v in result.values] == [(2, "2.27"), (3, "2.49")]
    text = path.read_text()
    assert "--num-speculative-tokens 2 --spec-decode-acceptance-length 2.27\n" in text
    assert "--num-speculative-tokens 3 --spec-decode-acceptance-length 2.49\n" in text


def test_atom_k_from_a_variable_or_from_the_flag(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(SCRIPT.format(prelude="", k='"$NUM_SPEC_TOKENS"'))
    with pytest.raises(Exception, match="K is missing"):
        inject(path, thinking="on", check=True)
    result = inject(path, thinking="on", k=3)
    assert [(v.k, v.al) for v in result.values] == [(3, "2.49")]
    assert '--num-speculative-tokens "$NUM_SPEC_TOKENS" --spec-decode-acceptance-length 2.49' \
        in path.read_text()
    assigned = tmp_path / "assigned.sh"
    assigned.write_text(SCRIPT.format(prelude="NUM_SPEC_TOKENS=2", k='"$NUM_SPEC_TOKENS"'))
    assert [v.k for v in inject(assigned, thinking="on").values] == [2]
    with pytest.raises(PolicyError, match="--k 3 contradicts the file"):
        inject(assigned, thinking="on", k=3)


def test_atom_rate_given_as_a_shell_variable_is_checked_not_a_crash(tmp_path, run_cli):
    path = _copy(tmp_path, "atom_rate_var.sh")
    rc, out, err = run_cli("inject", path, "--thinking", "on", "--model", "glm5.2")
    assert (rc, out) == (0, "")
    assert err == f"{path}: already carries the golden AL in 1 entry; nothing to change\n"
    path.write_text(path.read_text().replace("SIMULATE_ACC_LEN=2.99", "SIMULATE_ACC_LEN=2.50"))
    rc, out, err = run_cli("inject", path, "--thinking", "on", "--model", "glm5.2")
    assert (rc, out) == (1, "")
    assert err == (f"error: {path}:20: --spec-decode-acceptance-rate is $SPEC_ACCEPTANCE_RATE, "
                   "computed at run time as 0.5, which is not the golden value 0.663333333333; "
                   "fix the computation by hand\n")


# ------------------------------------------------------------------ 11: SGLang PD takes decode's K

def test_sglang_pd_prefill_carries_the_decode_cell_in_inject_and_audit(tmp_path):
    from goldenal.auditing import audit

    folder = tmp_path / "repo" / "agentic"
    folder.mkdir(parents=True)
    path = _copy(folder, "pd_glm.yaml")
    text = path.read_text()
    # prefill drafts K=1, decode K=2; both blocks pin '2.5' (the K=2 cell, %g style)
    assert "speculative-num-steps: 1\n" in text and "speculative-num-steps: 2\n" in text
    result = inject(path, thinking="on", check=True)
    assert [(v.role, v.k, v.al) for v in result.values] == [("prefill", 2, "2.50"),
                                                           ("decode", 2, "2.50")]
    assert audit([str(tmp_path / "repo")]) == []
    # a prefill pinned to its own K=1 cell is what the audit now reports
    path.write_text(text.replace("SGLANG_SIMULATE_ACC_LEN: '2.5'\n  decode_environment",
                                 "SGLANG_SIMULATE_ACC_LEN: '1.84'\n  decode_environment"))
    (bad,) = [f for f in audit([str(tmp_path / "repo")]) if f.code == "GAL201"]
    assert (bad.line, bad.expected) == (23, "2.50")
    with pytest.raises(Exception, match="already pinned to 1.84, golden value is 2.50"):
        inject(path, thinking="on")


@pytest.mark.parametrize("name, message", [
    ("dspark_dsv4.yaml", "no dspark curve for model deepseek-v4-pro"),
    ("k25_prob.yaml", "no curve for model kimi-k2.5-nvfp4 with variant "
                      "draft_sample_method=probabilistic"),
])
def test_audit_refuses_what_inject_refuses(tmp_path, name, message):
    from goldenal.auditing import audit

    agentic = tmp_path / "agentic"
    agentic.mkdir()
    text = (POLICY_CASES / name).read_text().replace(
        '"num_speculative_tokens":3', '"num_speculative_tokens":3,"rejection_sample_method":'
        '"synthetic","synthetic_acceptance_length":2.49')
    (agentic / name).write_text(text)
    with pytest.raises(UnknownCurve, match=message):
        inject(agentic / name, thinking="on", force=True)
    (finding,) = [f for f in audit([str(tmp_path)]) if f.code == "GAL101"]
    assert finding.message.startswith(message)


@pytest.mark.parametrize("name, curve", [("vllm_config.yaml", "minimaxm3_eagle3_gqa"),
                                         ("vllm_config.json", "dsv4_mtp"),
                                         ("atom_launch.sh", "dsv4_mtp")])
def test_audit_agrees_with_what_inject_wrote_in_serve_configs(tmp_path, name, curve):
    from goldenal.auditing import audit

    agentic = tmp_path / "agentic"
    agentic.mkdir()
    path = _copy(agentic, name, DATA)
    result = inject(path, thinking="on")
    assert {v.curve for v in result.values} == {curve}
    codes = {f.code for f in audit([str(tmp_path)])}
    assert not codes & {"GAL101", "GAL102", "GAL201", "GAL202", "GAL203", "GAL304"}, codes
