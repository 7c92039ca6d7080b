"""Property tests: generated recipe layouts are rewritten minimally and idempotently."""

from hypothesis import HealthCheck, given, settings, strategies as st
from ruamel.yaml import YAML

from goldenal.apply.inject import inject

_names = st.sampled_from(["HF_HOME", "PYTHONUNBUFFERED", "NCCL_CUMEM_ENABLE", "UCX_TLS",
                          "TLLM_LOG_LEVEL", "DYN_TOKENIZER"])
_values = st.sampled_from(["1", "0", "INFO", "rc,cuda_copy", "/hf_hub_cache"])


@st.composite
def recipes(draw):
    """An srt-slurm recipe with one engine, 1-2 roles, any indentation and quoting."""
    engine = draw(st.sampled_from(["sglang", "trtllm"]))
    indent = draw(st.sampled_from([2, 4]))
    quote = draw(st.sampled_from(["'", '"', ""]))
    roles = draw(st.sampled_from([["aggregated"], ["prefill", "decode"], ["decode"]]))
    k = draw(st.integers(1, 8))
    comment = draw(st.booleans())
    anchor = len(roles) == 2 and draw(st.booleans())
    i1, i2 = " " * indent, " " * (2 * indent)
    lines = ["name: generated", "model:", f"{i1}path: nvidia/GLM-5.2-NVFP4", "backend:",
             f"{i1}type: {engine}"]
    for n, role in enumerate(roles):
        if anchor and n == 1:
            lines.append(f"{i1}{role}_environment: *env")
            continue
        lines.append(f"{i1}{role}_environment:" + (" &env" if anchor else ""))
        env = draw(st.dictionaries(_names, _values, min_size=1, max_size=4))
        for key, value in env.items():
            tail = "  # note" if comment else ""
            lines.append(f"{i2}{key}: {quote}{value}{quote}{tail}")
    lines.append(f"{i1}{engine}_config:")
    for role in roles:
        lines.append(f"{i2}{role}:")
        i3 = " " * (3 * indent)
        if engine == "sglang":
            lines += [f"{i3}speculative-algorithm: EAGLE", f"{i3}speculative-num-steps: {k}"]
        else:
            lines += [f"{i3}speculative_config:", f"{i3}{i1}decoding_type: MTP",
                      f"{i3}{i1}max_draft_len: {k}"]
    return engine, k, roles, "\n".join(lines) + "\n"


GOLDEN_ON = {1: "1.84", 2: "2.50", 3: "2.99", 4: "3.33", 5: "3.61", 6: "3.78", 7: "3.91",
             8: "4.06"}  # glm5.2_mtp.yaml, thinking_on


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recipe=recipes())
def test_generated_recipes_get_the_knob_in_every_block_and_nothing_else(tmp_path, recipe):
    engine, k, roles, text = recipe
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    result = inject(path, thinking="on")
    after = path.read_text()
    # Only added lines: removing them gives back the input byte for byte.
    added = [ln for ln in after.splitlines() if ln not in text.splitlines()]
    assert "\n".join(ln for ln in after.splitlines() if ln not in added) + "\n" == text
    data = YAML(typ="safe").load(after)
    expected = GOLDEN_ON[k] if engine == "sglang" else f"{float(GOLDEN_ON[k]) - 1:.2f}"
    knob = ("SGLANG_SIMULATE_ACC_LEN" if engine == "sglang"
            else "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS")
    for role in roles:
        assert str(data["backend"][f"{role}_environment"][knob]) == expected
    assert result.changed >= 1
    again = inject(path, thinking="on")
    assert again.changed == 0 and path.read_text() == after


# engine -> (knob, the base's K=3 value, the K setting's path under <engine>_config.decode)
ZIP_ENGINES = {"sglang": ("SGLANG_SIMULATE_ACC_LEN", "2.99", ["speculative-num-steps"]),
               "trtllm": ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "1.99",
                          ["speculative_config", "max_draft_len"])}


@st.composite
def zip_recipes(draw):
    """A recipe whose ``zip_override_k`` section drafts a list of K over a K=3 base, its own
    environment block absent, holding other keys, or a value for every variant."""
    engine = draw(st.sampled_from(sorted(ZIP_ENGINES)))
    knob, value, k_path = ZIP_ENGINES[engine]
    ks = draw(st.lists(st.integers(1, 8), min_size=2, max_size=4))
    quote = draw(st.sampled_from(["'", '"', ""]))
    own = draw(st.sampled_from(["none", "other", "pinned"]))
    env = {"none": "", "other": f"    decode_environment:\n      HF_HOME: {quote}/hf{quote}\n",
           "pinned": f"    decode_environment:\n      {knob}: {quote}{value}{quote}\n"}[own]

    def spec(k):
        if engine == "sglang":
            return f"        speculative-algorithm: EAGLE\n        {k_path[0]}: {k}\n"
        return (f"        speculative_config:\n          decoding_type: MTP\n"
                f"          {k_path[1]}: {k}\n")

    text = (f"base:\n  name: glm5.2-agentx\n  model:\n    path: glm-5.2-fp8\n  backend:\n"
            f"    type: {engine}\n    decode_environment:\n"
            f"      SGLANG_ENABLE_THINKING: {quote}1{quote}\n"
            f"      {knob}: {quote}{value}{quote}\n"
            f"    {engine}_config:\n      decode:\n{spec(3)}"
            f"zip_override_k:\n  backend:\n{env}    {engine}_config:\n      decode:\n"
            + spec(f"[{', '.join(map(str, ks))}]").replace("speculative-algorithm: EAGLE\n", "")
            .replace("decoding_type: MTP\n          ", ""))
    return engine, ks, text


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recipe=zip_recipes())
def test_each_variant_of_a_generated_zip_section_reads_its_own_k_value(tmp_path, recipe):
    from goldenal.auditing import audit

    engine, ks, text = recipe
    knob = ZIP_ENGINES[engine][0]
    folder = tmp_path / "agentic"
    folder.mkdir(exist_ok=True)
    path = folder / "recipe.yaml"
    path.write_text(text)
    inject(path, thinking="on", force=True)
    after = path.read_text()
    written = YAML(typ="safe").load(after)["zip_override_k"]["backend"]
    value = (written.get("decode_environment") or {}).get(knob)
    if len(set(ks)) > 1:
        assert isinstance(value, list) and len(value) == len(ks)
    for i, k in enumerate(ks):      # srtctl's slice: the index, or the one value for all
        read = value[i] if isinstance(value, list) else value
        if read is None:            # the variant inherits the base's K=3 value
            assert k == 3
            continue
        al = float(read) + (1 if engine == "trtllm" else 0)    # TensorRT-LLM: AL - 1
        assert f"{al:.2f}" == GOLDEN_ON[k]
    # TensorRT-LLM reads no thinking signal here: its mode is assumed (GAL305), nothing else
    assert {f.code for f in audit([folder], root=folder)} <= {"GAL305"}
    again = inject(path, thinking="on")
    assert again.changed == 0 and path.read_text() == after
