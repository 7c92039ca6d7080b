"""`goldenal import`: upstream files in, project layout out; committed values protected."""

import os
import re
import shlex


import goldenal
from conftest import PACKAGED, REFERENCE_GOLDEN


def readme_import_commands():
    """The `goldenal import` commands documented in golden_al_distribution/README.md."""
    text = (PACKAGED / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [shlex.split(cmd.replace("\\\n", " ")) for cmd in block.strip().split("\ngoldenal ")]


def test_documented_imports_reproduce_the_packaged_directory(tmp_path, run_cli):
    out = tmp_path / "golden"
    for argv in readme_import_commands():
        argv = [a.replace("$UP", str(REFERENCE_GOLDEN)) for a in argv if a != "goldenal"]
        argv[argv.index("--golden-dir") + 1] = str(out)
        code, _, err = run_cli(*argv)
        assert code == 0, err
    committed = sorted(p.name for p in PACKAGED.iterdir() if p.name != "README.md")
    assert sorted(os.listdir(out)) == committed
    for name in committed:
        assert (out / name).read_bytes() == (PACKAGED / name).read_bytes(), name


def _upstream(tmp_path, value="2.78"):
    path = tmp_path / "upstream" / "minimaxm3_eagle3_gqa.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        "# Source GitHub Actions run: https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1\n"
        "# Acceptance Length (AL) reference values measured with SPEED-Bench.\n"
        "# dataset: coding | temperature: 1.0 | top_p: 0.95 | output_len: 4096\n"
        "# thinking_on chat_template_kwargs: {\"thinking_mode\": \"enabled\"}\n"
        "# Measured on minimax-m3 (B300, vLLM EAGLE3), per num_speculative_tokens.\n"
        "minimax-m3:\n  thinking_on:\n    2: 2.39\n"
        f"    3: {value}\n")
    return path


def test_changing_a_committed_value_needs_a_reason(golden_copy, tmp_path, run_cli):
    before = {p.name: p.read_bytes() for p in golden_copy.iterdir()}
    code, out, err = run_cli("import", _upstream(tmp_path, "2.80"), "--golden-dir", golden_copy)
    assert (code, out) == (3, "")
    assert err == (f"error: {golden_copy}/minimaxm3_eagle3_gqa.yaml: would overwrite committed "
                   "golden values (thinking_on K=1: 1.79 -> removed; thinking_on K=3: 2.78 -> "
                   "2.80; thinking_on K=4: 3.02 -> removed; thinking_on K=5: 3.21 -> removed; "
                   "thinking_on K=6: 3.30 -> removed; thinking_on K=7: 3.52 -> removed; "
                   "thinking_on K=8: 3.51 -> removed; thinking_off K=1: 1.83 -> removed; "
                   "thinking_off K=2: 2.46 -> removed; thinking_off K=3: 2.97 -> removed; "
                   "thinking_off K=4: 3.29 -> removed; thinking_off K=5: 3.72 -> removed; "
                   "thinking_off K=6: 3.76 -> removed; thinking_off K=7: 3.75 -> removed; "
                   "thinking_off K=8: 3.93 -> removed); pass a reason to replace them "
                   "(--replace REASON)\n")
    assert {p.name: p.read_bytes() for p in golden_copy.iterdir()} == before


def test_replace_records_the_reason(golden_copy, tmp_path, run_cli):
    code, _, err = run_cli("import", _upstream(tmp_path, "2.80"), "--golden-dir", golden_copy,
                           "--replace", "re-measured after the draft head fix")
    assert code == 0, err
    curve = goldenal.load_registry(golden_copy)["minimaxm3_eagle3_gqa"]
    assert curve.cells == {"on": {2: "2.39", 3: "2.80"}}
    assert curve.draft == ("Inferact/MiniMax-M3-EAGLE3-GQA",)  # identity kept from the manifest
    (entry,) = curve.provenance["replacements"]
    assert entry["reason"] == "re-measured after the draft head fix"
    assert entry["cells"]["thinking_on K=3"] == "2.78 -> 2.80"
    assert run_cli("lookup", "--golden-dir", golden_copy, "minimax-m3", "--draft",
                   "Inferact/MiniMax-M3-EAGLE3-GQA", "--k", "3", "--thinking", "on") == (
        0, "2.80\n", "")
    assert run_cli("validate", golden_copy)[0] == 0


def test_reimporting_identical_values_is_allowed(golden_copy, run_cli):
    before = (golden_copy / "manifest.yaml").read_bytes()
    code, _, err = run_cli("import", REFERENCE_GOLDEN / "qwen3.5_mtp.yaml", "--golden-dir",
                           golden_copy)
    # every file written is named
    assert (code, err) == (0, "imported qwen3.5_mtp: qwen3.5-397b-a17b-nvfp4, 16 cells\n"
                              f"wrote {golden_copy}/qwen3.5_mtp.yaml\n"
                              f"wrote {golden_copy}/manifest.yaml\n"
                              f"wrote {golden_copy}/index.tsv\n")
    assert (golden_copy / "manifest.yaml").read_bytes() == before


def test_new_curve_into_an_empty_directory(tmp_path, run_cli):
    out = tmp_path / "mine"
    code, _, err = run_cli("import", _upstream(tmp_path), "--golden-dir", out, "--curve-id", "mm3_gqa",
                           "--method", "eagle3", "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA",
                           "--alias", "minimaxm3")
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["index.tsv", "manifest.yaml", "mm3_gqa.yaml"]
    text = (out / "mm3_gqa.yaml").read_text()
    assert text.endswith("minimax-m3:\n  thinking_on:\n    2: 2.39\n    3: 2.78\n")
    assert "# Source run: https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1\n" in text
    assert run_cli("lookup", "minimaxm3", "--k", "3", "--thinking", "on", "--golden-dir", out) == (
        0, "2.78\n", "")


def test_malformed_upstream_file_is_one_line(tmp_path, run_cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  thinking_on:\n    1: [1.5\n")
    code, out, err = run_cli("import", bad, "--golden-dir", tmp_path / "out")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {bad}:4: not valid YAML: ") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_header_provenance_of_each_upstream_layout():
    from goldenal.golden.curvefile import parse_header

    prov, hints = parse_header([
        "# Source GitHub Actions run: https://github.com/SemiAnalysisAI/InferenceX/actions/runs/27317114007",
        "# dataset: coding | output_len: 4096",
        "# thinking_on : temp 0.6 top_p 0.95 top_k 20 presence_penalty 0.0 | chat_template_kwargs: {\"enable_thinking\": true}",
        "# thinking_off: temp 0.7 top_p 0.8 top_k 20 presence_penalty 1.5 | chat_template_kwargs: {\"enable_thinking\": false}",
        "# speculative-config: draft_sample_method=probabilistic | rejection_sample_method=block",
        "# Measured on kimi-k3 (B300, vLLM DSpark, draft: Inferact/Kimi-K3-DSpark), per num_speculative_tokens.",
        "# Auto-generated by benchmarks/x.sh (speedbench-al.yml).",
    ])
    assert prov["sampling"] == {
        "thinking_on": {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "presence_penalty": 0.0,
                        "chat_template_kwargs": {"enable_thinking": True}},
        "thinking_off": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5,
                         "chat_template_kwargs": {"enable_thinking": False}}}
    assert (prov["category"], prov["output_len"], prov["hardware"], prov["engine"]) == (
        "coding", 4096, "B300", "vLLM")
    assert (prov["collector"], prov["workflow"]) == ("benchmarks/x.sh", "speedbench-al.yml")
    assert hints == {"method": "dspark", "draft": ["Inferact/Kimi-K3-DSpark"],
                     "variant": {"draft_sample_method": "probabilistic",
                                 "rejection_sample_method": "block"}}


def test_upstream_directory_identity_from_stems_and_headers():
    reg = goldenal.load_registry(REFERENCE_GOLDEN)
    k3 = reg["kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method"]
    assert (k3.model, k3.method, k3.draft) == ("kimi-k3", "dspark", ("Inferact/Kimi-K3-DSpark",))
    assert k3.variant == {"draft_sample_method": "probabilistic",
                          "rejection_sample_method": "block"}
    assert reg["minimaxm3_eagle3"].method == "eagle3"
    # the ids are the packaged curves': identity (heads, aliases) from the packaged manifest
    assert reg["minimaxm3_eagle3"].draft == ("Inferact/MiniMax-M3-EAGLE3",)
    assert reg["dsv4_mtp"].aliases == ("dsv4", "deepseek-ai/DeepSeek-V4-Pro")
    assert reg.warnings == ()
    assert str(goldenal.lookup("dsv4", k=3, thinking="on", golden_dir=REFERENCE_GOLDEN)) == "2.49"


def _renamed_upstream(tmp_path):
    """InferenceX's curve directory under ids the packaged manifest does not know."""
    out = tmp_path / "golden_al_distribution"
    out.mkdir()
    for path in REFERENCE_GOLDEN.glob("*.yaml"):
        (out / path.name.replace("minimaxm3_", "minimax_m3_")).write_bytes(path.read_bytes())
    return out


def test_an_upstream_directory_whose_heads_are_unknown_says_so_once(tmp_path, capsys):
    from goldenal.cli import main

    golden = _renamed_upstream(tmp_path)
    reg = goldenal.load_registry(golden)
    assert reg["minimax_m3_eagle3_gqa"].draft == ()
    assert reg.warnings == (
        f"{golden} has no manifest.yaml, and curves minimax_m3_eagle3, minimax_m3_eagle3_gqa do "
        "not name their draft heads: a config serving one of those models with a draft head is "
        "checked against every such curve of its model, and is wrong only when it matches none "
        "(`goldenal import --draft` names a head)",)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    spec = ('{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3-GQA",'
            '"num_speculative_tokens":3,"rejection_sample_method":"synthetic",'
            '"synthetic_acceptance_length":VALUE}')
    # InferenceX's launcher names: the model prefix first (minimaxm3_fp4_b200_vllm.sh)
    for name, value in (("gqa", "2.78"), ("non_gqa", "2.83"), ("wrong", "2.80")):
        (repo / "agentic").mkdir(exist_ok=True)
        (repo / "agentic" / f"minimax_{name}_vllm.sh").write_text(
            f"vllm serve minimax-m3 --speculative-config '{spec.replace('VALUE', value)}' "
            "--default-chat-template-kwargs '{\"thinking_mode\": \"enabled\"}'\n")
    rc = main(["audit", str(repo), "--no-cache", "--isolated", "--golden-dir", str(golden)])
    out, err = capsys.readouterr()
    # said once, at the top; no GAL101 per file; the one value matching no curve is wrong
    assert err == f"warning: {reg.warnings[0]}\n"
    assert rc == 1
    assert out.splitlines()[:-2] == [
        "agentic/minimax_wrong_vllm.sh:1:171: GAL201 synthetic_acceptance_length=2.80 matches no candidate "
        "cell: minimax_m3_eagle3 thinking_on K=3 (2.83), minimax_m3_eagle3_gqa thinking_on K=3 "
        "(2.78); which applies cannot be decided (the registry names no draft head for these "
        "curves), but the value is wrong whichever does"]


def test_an_eagle3_curve_without_a_head_is_refused(tmp_path, run_cli):
    out = tmp_path / "golden"
    code, stdout, err = run_cli("import", _upstream(tmp_path), "--golden-dir", out)
    assert (code, stdout) == (2, "")
    assert err == (f"error: {tmp_path}/upstream/minimaxm3_eagle3_gqa.yaml: curve "
                   "minimaxm3_eagle3_gqa was measured with method eagle3, whose curves belong "
                   "to one draft head, and neither the file's header nor the manifest names "
                   "it: pass --draft HF_ID\n")
    assert not out.exists()
    code, _, err = run_cli("import", _upstream(tmp_path), "--golden-dir", out,
                           "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA")
    assert (code, err) == (0, "imported minimaxm3_eagle3_gqa: minimax-m3, 2 cells\n" + "".join(
        f"wrote {out / name}\n" for name in ("minimaxm3_eagle3_gqa.yaml", "manifest.yaml",
                                             "index.tsv")))


def test_a_second_curve_with_the_same_identity_is_refused(golden_copy, tmp_path, run_cli):
    """POLICY rule 1: one identity has one curve, so a new id cannot shadow a committed one."""
    before = {p.name: p.read_bytes() for p in golden_copy.iterdir()}
    code, out, err = run_cli("import", _upstream(tmp_path, "3.50"), "--golden-dir", golden_copy,
                             "--curve-id", "gqa2", "--method", "eagle3",
                             "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA")
    assert (code, out) == (3, "")
    assert err == (f"error: {golden_copy}/manifest.yaml: curve minimaxm3_eagle3_gqa already "
                   "holds this identity (model minimax-m3, method eagle3, draft "
                   "Inferact/MiniMax-M3-EAGLE3-GQA, variant none); one identity has one curve: "
                   "write to curve id minimaxm3_eagle3_gqa instead\n")
    assert {p.name: p.read_bytes() for p in golden_copy.iterdir()} == before


def test_an_upstream_directory_with_the_packaged_ids_audits_as_the_packaged_one():
    """InferenceX's own golden_al_distribution/ (no manifest): the same findings, no GAL101."""
    from goldenal.auditing import audit_report

    repo = os.path.join(os.path.dirname(__file__), "data", "audit", "repo")
    packaged = audit_report([repo], root=repo, settings=False)
    upstream = audit_report([repo], root=repo, settings=False, golden_dir=REFERENCE_GOLDEN)
    assert upstream.findings == packaged.findings
    assert upstream.notes == ()


def test_deprecated_out_still_imports_and_says_so(golden_copy, run_cli):
    code, _, err = run_cli("import", REFERENCE_GOLDEN / "qwen3.5_mtp.yaml", "--out", golden_copy)
    assert code == 0
    assert err.splitlines()[:2] == ["warning: --out is deprecated here; use --golden-dir",
                                    "imported qwen3.5_mtp: qwen3.5-397b-a17b-nvfp4, 16 cells"]
    code, _, err = run_cli("import", REFERENCE_GOLDEN / "qwen3.5_mtp.yaml", "--out", golden_copy,
                           "--golden-dir", golden_copy)
    assert (code, err) == (2, "error: --out is the old name of --golden-dir: give one of "
                              "them\n")


def test_import_never_writes_the_installed_curves_by_default(tmp_path, run_cli, monkeypatch):
    from goldenal.golden.registry import packaged_dir

    monkeypatch.delenv("GOLDENAL_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # no golden_al_distribution/ here or above
    before = {p.name: p.read_bytes() for p in os.scandir(packaged_dir()) if p.is_file()
              for p in [__import__("pathlib").Path(p.path)]}
    code, out, err = run_cli("import", REFERENCE_GOLDEN / "qwen3.5_mtp.yaml")
    assert (code, out) == (2, "")
    assert err == ("error: no golden directory to import into: give --golden-dir DIR (or set "
                   f"$GOLDENAL_DIR); the curves installed with goldenal ({packaged_dir()}) are "
                   "never written by default\n")
    after = {p.name: p.read_bytes() for p in os.scandir(packaged_dir()) if p.is_file()
             for p in [__import__("pathlib").Path(p.path)]}
    assert after == before
    # a golden_al_distribution/ in the current directory is where an import goes
    (tmp_path / "golden_al_distribution").mkdir()
    code, _, err = run_cli("import", REFERENCE_GOLDEN / "qwen3.5_mtp.yaml")
    assert code == 0, err
    assert err.endswith(f"wrote {tmp_path}/golden_al_distribution/index.tsv\n")
