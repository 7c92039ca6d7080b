"""srt-slurm recipes as srtctl reads them, in ``audit`` and ``inject``: variants, the 2.0
layout and sweeps.

srtctl expands a recipe with a ``base`` section into one recipe per ``override_*``
section and ``zip_override_*`` index, and nothing else (``_expand_override_variants``
in NVIDIA/srt-slurm ``src/srtctl/core/config.py``, the same in the SemiAnalysisAI fork
InferenceX runs).  Its ``deep_merge`` merges mappings key by key, replaces anything
else, and deletes a key whose overriding value is null; ``_apply_zip_slice`` reads
each list of a zip section at the variant's index, a one-item list at 0, and
``_determine_zip_length`` refuses empty lists and lists of two lengths.

The 2.0 layout (``schema: 2``) writes a role's engine settings under ``roles.<role>.args``
and its environment under ``roles.<role>.env``, the roles named ``prefill``, ``decode`` and
``agg``, and the engine as ``engine:`` (a name, or a mapping with ``type``), SGLang when
nothing names one (``expand_roles``, ``expand_engine`` and ``_engine_key`` in NVIDIA/srt-slurm
``src/srtctl/core/roles.py``).

A recipe with a ``sweep`` mapping runs once per combination of its parameters' lists (a
Cartesian product), ``{name}`` in every string replaced by ``str()`` of the value, a string
that is just the placeholder of a list becoming the list (``generate_sweep_configs`` and
``expand_template`` in NVIDIA/srt-slurm ``src/srtctl/core/sweep.py``).
"""

import textwrap

import pytest

from goldenal.apply.inject import inject
from goldenal.auditing import audit
from goldenal.core.errors import ConflictError, ParseError, PolicyError
from goldenal.recipes import spans

# glm5.2_mtp thinking_on: K=2 -> 2.50, K=3 -> 2.99 (the packaged curves)
BASE = """\
base:
  name: glm5.2-agentx
  model:
    path: glm-5.2-fp8
  backend:
    type: sglang
    decode_environment:
      SGLANG_ENABLE_THINKING: '1'
      SGLANG_SIMULATE_ACC_LEN: '2.99'
      SGLANG_SIMULATE_ACC_METHOD: 'match-expected'
      SGLANG_SIMULATE_ACC_TOKEN_MODE: 'real-draft-token'
    sglang_config:
      decode:
        speculative-algorithm: EAGLE
        speculative-num-steps: 3
        speculative-eagle-topk: 1
"""


# a zip section of two variants drafting K=2 and K=3, the second's length wrong
ZIP_K = """\
zip_override_k:
  name: [a, b]
  backend:
    decode_environment:
      SGLANG_SIMULATE_ACC_LEN: ['2.50', '2.9']
    sglang_config:
      decode:
        speculative-num-steps: [2, 3]
"""


def _agentic(tmp_path, name, text):
    """``text`` written as ``agentic/<name>`` (the folder says the scenario)."""
    folder = tmp_path / "agentic"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def _recipe(tmp_path, variants):
    return _agentic(tmp_path, "recipe.yaml", BASE + variants)


def _findings(path):
    return [(f.line, f.col, f.code, f.message.rsplit(" [", 1)[-1])
            for f in audit([path.parent], root=path.parent)]


def _refusal(path, error, **options):
    """The message of the ``error`` inject raises for ``path``, which it leaves as it was."""
    before = path.read_text()
    with pytest.raises(error) as exc:
        inject(path, thinking="on", **options)
    assert path.read_text() == before
    return str(exc.value)


# -- the layered and sliced views ---------------------------------------------------------

def test_a_null_in_a_variant_deletes_the_key_a_null_in_the_base_stays():
    root = spans.compose("base:\n  env: {A: '1', B: '2', C: ~}\n"
                         "override_x:\n  env: {A: null, D: '4'}\n")
    env = spans.Layers(spans.get(root, "override_x"), spans.get(root, "base")).lookup(("env",))
    assert spans.get(env, "A") is None          # not the base's '1'
    assert spans.scalar(spans.get(env, "B")) == "2"
    assert spans.is_null(spans.get(env, "C"))   # the base's own null is a value
    assert [k.value for k, _ in spans.pairs(env)] == ["D", "B", "C"]


def test_a_variant_replacing_a_mapping_by_a_scalar_hides_the_base_mapping():
    root = spans.compose("base:\n  env: {A: '1'}\noverride_x:\n  env: none\n")
    view = spans.Layers(spans.get(root, "override_x"), spans.get(root, "base"))
    assert spans.scalar(spans.get(view, "env")) == "none"
    assert spans.get(view, "env", "A") is None


def test_a_zip_slice_reads_each_list_at_its_index_and_broadcasts_one_item():
    node = spans.get(spans.compose(
        "z:\n  name: [a, b]\n  one: [x]\n  k: 3\n  deep: {n: [1, 2]}\n  ll: [[1], [2, 3]]\n"), "z")
    assert spans.zip_length(node) == 2
    second = spans.ZipSlice(node, 1)
    assert [spans.scalar(spans.get(second, key)) for key in ("name", "one", "k")] == \
        ["b", "x", "3"]
    assert spans.scalar(spans.get(second, "deep", "n")) == "2"
    assert spans.to_python(second)["ll"] == [2, 3]       # a list of lists gives lists
    assert spans.scalar(spans.own_pair(second, "name")[1]) == "b"


@pytest.mark.parametrize("body,line,message", [
    ("z:\n  a: [1, 2]\n  b: {c: [1, 2, 3]}\n", 3,
     "zip_override lists of lengths 2 and 3: srt-slurm zips lists of one length "
     "(or of one item)"),
    ("z:\n  a: [1, 2]\n  b: []\n", 3, "a zip_override list is empty: srt-slurm has nothing "
                                      "to zip"),
    # srtctl recurses without end; goldenal said "maximum recursion depth exceeded"
    ("z: &z\n  a: [1, 2]\n  b: {c: *z}\n", 1, "a zip_override section contains itself "
                                            "(through an alias)"),
])
def test_zip_lists_srtctl_refuses_are_refused_with_their_line(body, line, message):
    with pytest.raises(ParseError) as exc:
        spans.zip_length(spans.get(spans.compose(body), "z"), "r.yaml")
    assert str(exc.value) == f"r.yaml:{line}: {message}"


# -- audit ----------------------------------------------------------------------------------

def test_a_variant_deleting_the_knob_with_null_is_a_missing_knob(tmp_path):
    """Regression: ``SGLANG_SIMULATE_ACC_LEN: null`` in an override was read as the value
    None (info) although srtctl runs that variant without the knob."""
    path = _recipe(tmp_path, "override_noacc:\n  backend:\n    decode_environment:\n"
                             "      SGLANG_SIMULATE_ACC_LEN: null\n")
    assert _findings(path) == [(14, 1, "GAL301", "role decode; branch variant override_noacc]")]


def test_each_index_of_a_zip_section_is_checked_with_its_own_values(tmp_path):
    """Regression: lists of K and of the knob in a zip section were one variant whose
    length was "not a literal number" (info); ``['9.99']`` hid a wrong value."""
    path = _recipe(tmp_path, ZIP_K + """\
zip_override_one:
  name: [c]
  backend:
    decode_environment:
      SGLANG_SIMULATE_ACC_LEN: ['9.99']
""")
    assert _findings(path) == [
        (21, 42, "GAL201", "role decode; branch variant zip_override_k[1]]"),
        (29, 33, "GAL204", "role decode; branch variant zip_override_one]"),
    ]


def test_a_zip_name_that_is_a_mapping_is_no_name(tmp_path):
    """Regression (atheris): ``name: [a: b]`` (a flow list holding a mapping) sliced to the
    mapping, whose pairs were read as names (AttributeError)."""
    path = _recipe(tmp_path, "zip_override_x:\n  name: [agentx-c48: tp4]\n  backend:\n"
                             "    sglang_config:\n      decode:\n"
                             "        speculative-num-steps: 2\n")
    assert _findings(path) == [(9, 33, "GAL201", "role decode; branch variant zip_override_x]")]


def test_a_mapping_beside_base_that_is_no_variant_is_not_audited(tmp_path):
    path = _recipe(tmp_path, "defaults:\n  backend:\n    decode_environment:\n"
                             "      SGLANG_SIMULATE_ACC_LEN: '9.99'\n")
    assert _findings(path) == []


def test_a_zip_section_srtctl_refuses_is_a_parse_finding(tmp_path):
    path = _recipe(tmp_path, "zip_override_k:\n  name: [a, b, c]\n  backend:\n"
                             "    sglang_config:\n      decode:\n"
                             "        speculative-num-steps: [2, 3]\n")
    assert _findings(path) == [(18, 1, "GAL306", "cannot parse recipe: zip_override lists of "
                                "lengths 2 and 3: srt-slurm zips lists of one length (or of "
                                "one item)")]


# -- inject ---------------------------------------------------------------------------------

@pytest.mark.parametrize("written", ["null", "~", ""])
def test_a_deleted_knob_is_written_back_in_the_blocks_quotes(tmp_path, written):
    path = _recipe(tmp_path, "override_x:\n  backend:\n    decode_environment:\n"
                             f"      SGLANG_SIMULATE_ACC_LEN:{' ' if written else ''}{written}\n")
    assert inject(path, thinking="on").changed == 1
    assert path.read_text() == BASE + ("override_x:\n  backend:\n    decode_environment:\n"
                                       "      SGLANG_SIMULATE_ACC_LEN: '2.99'\n")


def test_a_zip_list_is_edited_at_the_index_that_needs_it(tmp_path):
    zipped = ZIP_K
    path = _recipe(tmp_path, zipped)
    result = inject(path, thinking="on", force=True)
    assert (result.changed, result.entries) == (1, 3)
    assert path.read_text() == BASE + zipped.replace("'2.9']", "'2.99']")
    assert inject(path, thinking="on").changed == 0


def test_companions_missing_from_a_zip_block_are_added_once(tmp_path):
    """Regression (atheris, caught by the read-back): a zip section whose length list was
    quoted at one index and plain at the other had each variant add the missing companions
    in its own quotes, so the block held them twice."""
    base = BASE.replace("""\
      SGLANG_ENABLE_THINKING: '1'
      SGLANG_SIMULATE_ACC_LEN: '2.99'
      SGLANG_SIMULATE_ACC_METHOD: 'match-expected'
      SGLANG_SIMULATE_ACC_TOKEN_MODE: 'real-draft-token'
""", """\
      SGLANG_ENABLE_THINKING: 1
      SGLANG_SIMULATE_ACC_LEN: 2.99
""")
    zipped = """\
zip_override_k:
  name: [a, b]
  backend:
    decode_environment:
      SGLANG_SIMULATE_ACC_LEN: ['2.50', 2.99]
"""
    spec = "    sglang_config:\n      decode:\n        speculative-num-steps: [2, 3]\n"
    path = _recipe(tmp_path, "")
    path.write_text(base + zipped + spec)
    assert inject(path, thinking="on").changed == 3
    added = ('      SGLANG_SIMULATE_ACC_METHOD: "match-expected"\n'
             '      SGLANG_SIMULATE_ACC_TOKEN_MODE: "real-draft-token"\n')
    assert path.read_text() == (base.replace("SGLANG_SIMULATE_ACC_LEN: 2.99\n",
                                             "SGLANG_SIMULATE_ACC_LEN: 2.99\n" + added)
                                + zipped + added + spec)


ZIP_SPEC = "    sglang_config:\n      decode:\n        speculative-num-steps: [2, 3]\n"
COMPANIONS = ('      SGLANG_SIMULATE_ACC_METHOD: "match-expected"\n'
              '      SGLANG_SIMULATE_ACC_TOKEN_MODE: "real-draft-token"\n')


def test_a_zip_section_drafting_two_k_gets_one_value_per_variant(tmp_path):
    """Regression: a zip section drafting K=2 and K=3 without an environment of its own got
    ``decode_environment: {SGLANG_SIMULATE_ACC_LEN: "2.50"}``, which srtctl hands to both
    variants: the K=3 one ran at 2.50 (then: refused).  Now it gets a list srtctl slices
    like the K list."""
    zipped = "zip_override_k:\n  name: [a, b]\n  backend:\n" + ZIP_SPEC
    path = _recipe(tmp_path, zipped)
    result = inject(path, thinking="on")
    assert (result.changed, result.entries) == (1, 2)
    assert path.read_text() == BASE + zipped + (
        '    decode_environment:\n      SGLANG_SIMULATE_ACC_LEN: ["2.50", "2.99"]\n')
    assert _findings(path) == []
    assert inject(path, thinking="on").changed == 0


BASE_COMPANIONS = """\
      SGLANG_SIMULATE_ACC_METHOD: 'match-expected'
      SGLANG_SIMULATE_ACC_TOKEN_MODE: 'real-draft-token'
"""


@pytest.mark.parametrize("inherited, written", [
    # regression: the base's companions were written again into the new block
    (BASE_COMPANIONS, ""),
    # one the base lacks or sets to another value: the base's own entry is fixed in the
    # same run, and the new block, planned on the file as read, states them too
    ("      SGLANG_SIMULATE_ACC_METHOD: 'multinomial'\n", COMPANIONS),
    ("      SGLANG_SIMULATE_ACC_METHOD: 'match-expected'\n", COMPANIONS.split("\n", 1)[1]),
])
def test_a_new_zip_block_repeats_no_companion_the_base_gives_it(tmp_path, inherited,
                                                                 written):
    """srtctl merges a variant's ``decode_environment`` over the base's key by key
    (``deep_merge``), so the new block carries the length list and only the companions
    the base does not already give with their value."""
    base = BASE.replace(BASE_COMPANIONS, inherited)
    zipped = "zip_override_k:\n  name: [a, b]\n  backend:\n" + ZIP_SPEC
    path = _recipe(tmp_path, "")
    path.write_text(base + zipped)
    assert inject(path, thinking="on").changed == (1 if inherited == BASE_COMPANIONS else 2)
    assert path.read_text().endswith(zipped + (
        '    decode_environment:\n      SGLANG_SIMULATE_ACC_LEN: ["2.50", "2.99"]\n'
        + written))
    assert _findings(path) == []


def test_a_trtllm_zip_section_gets_each_variant_its_accepted_token_count(tmp_path):
    """Regression: the list was made of the knob values, which TensorRT-LLM's plan
    converted again (AL - 1): an internal AttributeError.  Each variant's AL is converted
    once, to AL - 1."""
    path = _agentic(tmp_path, "recipe.yaml", """\
base:
  name: glm5.2-agentx
  model:
    path: glm-5.2-fp8
  backend:
    type: trtllm
    decode_environment:
      TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "1.99"
    trtllm_config:
      decode:
        speculative_config:
          decoding_type: MTP
          max_draft_len: 3
zip_override_k:
  backend:
    trtllm_config:
      decode:
        speculative_config:
          max_draft_len: [2, 3]
""")
    before = path.read_text()
    assert inject(path, thinking="on").changed == 1
    assert path.read_text() == before + (
        '    decode_environment:\n      TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: ["1.50", '
        '"1.99"]\n')
    # no thinking-mode signal: each config's mode is assumed (GAL305, info), nothing else
    assert {code for _, _, code, _ in _findings(path)} == {"GAL305"}


@pytest.mark.parametrize("base_k, ks, config", [
    # the base's own K=3 worker reads the 2.99
    (3, "[2, 3]", "role decode"),
    # regression: the variant's name lost its closing bracket (``zip_override_k[0``), the
    # label's brackets stripped with rstrip
    (2, "[3, 2]", "role decode; branch variant zip_override_k[0]"),
])
def test_audit_fix_leaves_a_base_value_a_zip_variant_inherits_and_says_who_needs_it(
        tmp_path, run_cli, monkeypatch, base_k, ks, config):
    """``--fix`` replaces literals: the base's 2.99 also serves a K=3 worker, so it stays,
    and the reason names that worker and its value, and the way to give each variant its
    own (``inject`` writes the variants their list)."""
    path = _agentic(tmp_path, "recipe.yaml", BASE.replace("num-steps: 3", f"num-steps: {base_k}")
                    + "zip_override_k:\n  name: [a, b]\n  backend:\n"
                    + ZIP_SPEC.replace("[2, 3]", ks))
    before = path.read_text()
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("audit", ".", "--fix")
    assert code == 1 and path.read_text() == before
    assert ("Not fixed: agentic/recipe.yaml:9:33: GAL201: the literal also serves another "
            f"config that needs another value ({config} needs 2.99; a shared anchor, "
            "variable or base section; `goldenal inject` gives a variant inheriting it its "
            "own value)") in err.splitlines()


@pytest.mark.parametrize("written, line, col", [
    ("SGLANG_SIMULATE_ACC_LEN: '2.99'", 21, 33),
    ("SGLANG_SIMULATE_ACC_LEN: ['2.99']", 21, 34),     # one item: every variant reads it
    ("OTHER: 'x'", 9, 33),                             # inherited from the base
])
def test_one_shared_value_in_a_zip_block_becomes_a_list_with_force(tmp_path, written, line,
                                                                    col):
    env = f"    decode_environment:\n      {written}\n"
    path = _recipe(tmp_path, "zip_override_k:\n  name: [a, b]\n  backend:\n" + env + ZIP_SPEC)
    before = path.read_text()
    assert _findings(path) == [(line, col, "GAL201",
                                "role decode; branch variant zip_override_k[0]]")]
    assert _refusal(path, ConflictError) == (
        f"{path}:{line}: SGLANG_SIMULATE_ACC_LEN is already pinned to 2.99, golden value is "
        "2.50; use --force to overwrite")
    assert inject(path, thinking="on", force=True).changed == 1
    listed = "SGLANG_SIMULATE_ACC_LEN: ['2.50', '2.99']"
    new = listed if "ACC_LEN" in written else f"{written}\n      {listed}"
    assert path.read_text() == before.replace(f"      {written}\n    sglang",
                                              f"      {new}\n    sglang")
    assert _findings(path) == []


def test_a_block_list_shared_by_a_zip_section_is_refused_not_rewritten(tmp_path):
    env = "    decode_environment:\n      SGLANG_SIMULATE_ACC_LEN:\n      - '2.99'\n"
    path = _recipe(tmp_path, "zip_override_k:\n  name: [a, b]\n  backend:\n" + env + ZIP_SPEC)
    assert _refusal(path, ParseError, force=True) == (
        f"{path}:22: cannot rewrite a block list here: write it as a flow list ([a, b])")


def test_a_zip_index_without_speculative_settings_gets_no_value_made_up(tmp_path):
    path = _agentic(tmp_path, "recipe.yaml", BASE.split("    sglang_config:")[0].replace(
        "      SGLANG_SIMULATE_ACC_LEN: '2.99'\n", "") + """\
zip_override_k:
  backend:
    sglang_config:
      decode:
      - {speculative-algorithm: EAGLE, speculative-num-steps: 2}
      - {speculative-algorithm: EAGLE, speculative-num-steps: 3}
      - {tp-size: 8}
""")
    assert _refusal(path, PolicyError) == (
        f"{path}:16: the decode workers of zip_override_k need different values (2.50, "
        "2.99) but zip_override_k[2] has no speculative settings to choose one for; give that "
        "variant its own section")


# minimaxm3_eagle3 thinking_on: K=2 -> 2.38, K=3 -> 2.83 (the packaged curves); a vLLM
# recipe drafting K=3 whose speculative-config mapping ends with ``knob``
VLLM = """\
name: minimax-m3-agentx
model:
  path: minimax-m3
backend:
  type: vllm
  vllm_config:
    decode:
      dyn-default-thinking-mode: "enabled"
      speculative-config:
        method: eagle3
        model: Inferact/MiniMax-M3-EAGLE3
        num_speculative_tokens: 3
        rejection_sample_method: synthetic
        {knob}
"""


def _vllm_base(tmp_path, knob):
    """:data:`VLLM` as the base of a variant drafting K=2, which writes only its K."""
    return _agentic(tmp_path, "recipe.yaml", "base:\n" + textwrap.indent(
        VLLM.format(knob=knob), "  ") + """\
override_k2:
  backend:
    vllm_config:
      decode:
        speculative-config:
          num_speculative_tokens: 2
""")


def test_a_vllm_variant_merges_its_speculative_config_mapping_over_the_base(tmp_path):
    """Regression: a variant's speculative-config mapping was read alone, without the
    base's keys srtctl's deep_merge gives it.  Its knob, inherited at the K=3 value, was
    "no synthetic-acceptance knob" (GAL301), and inject could not tell its draft head."""
    path = _vllm_base(tmp_path, "synthetic_acceptance_length: 2.83")
    before = path.read_text()
    assert _findings(path) == [(15, 40, "GAL201", "role decode; branch variant override_k2]")]
    assert _refusal(path, ConflictError) == (
        f"{path}:21: synthetic_acceptance_length is already pinned to 2.83, golden value is "
        "2.38; use --force to overwrite")
    result = inject(path, thinking="on", force=True)
    assert (result.changed, result.entries) == (1, 2)     # the base carries its value
    assert path.read_text() == before + "          synthetic_acceptance_length: 2.38\n"
    assert _findings(path) == []


@pytest.mark.parametrize("key", ["[a, b]", "{a: b}"])
def test_a_collection_as_a_key_in_a_layered_mapping_is_passed_over(tmp_path, key):
    """Regression (atheris): a mapping or list as a key in a base's mapping, read beneath a
    variant, raised TypeError (unhashable type) in the audit; it names no setting."""
    path = _vllm_base(tmp_path, "synthetic_acceptance_length: 2.83")
    path.write_text(path.read_text().replace(
        "        dyn-default", f"        ? {key}\n        : 1\n        dyn-default"))
    assert _findings(path) == [(17, 40, "GAL201", "role decode; branch variant override_k2]")]


def test_a_vllm_variant_deletes_rates_it_inherits_with_a_null(tmp_path):
    """A key to remove that the variant inherits is deleted as srtctl deletes one, by a
    null in the variant (removing nothing would leave the base's rates in force)."""
    path = _vllm_base(tmp_path, "synthetic_acceptance_rates: [0.8, 0.6, 0.43]")
    before = path.read_text()
    # the rates' AL beside them (1 + their sum), as for every knob not in AL itself
    (finding,) = audit([path.parent], root=path.parent)
    assert (finding.line, finding.message) == (15, (
        'synthetic_acceptance_rates=["0.8", "0.6", "0.43"] (AL 2.83) differs from the golden '
        "cell minimaxm3_eagle3 thinking_on K=2: expected 2.38; 2.83 is minimaxm3_eagle3 "
        "thinking_on K=3, but this config serves Inferact/MiniMax-M3-EAGLE3 thinking_on K=2 "
        "[role decode; branch variant override_k2]"))
    assert inject(path, thinking="on", force=True).changed == 1
    assert path.read_text() == before + ("          synthetic_acceptance_length: 2.38\n"
                                         "          synthetic_acceptance_rates: null\n")
    assert _findings(path) == []
    assert inject(path, thinking="on").changed == 0


def _vllm_zip(tmp_path, knob=""):
    """:data:`VLLM` as the base of a zip section drafting K=2, 3 and 4."""
    return _agentic(tmp_path, "recipe.yaml", "base:\n" + textwrap.indent(
        VLLM.format(knob="synthetic_acceptance_length: 2.83"), "  ") + """\
zip_override_k:
  backend:
    vllm_config:
      decode:
        speculative-config:
          num_speculative_tokens: [2, 3, 4]
""" + knob)


def test_a_vllm_zip_section_gets_its_lengths_as_a_list_in_its_mapping(tmp_path):
    """Was refused ("share one speculative-config"): the zip section's mapping is every
    variant's, so the length goes there as a list srtctl slices (K=2, 3, 4: 2.38, 2.83,
    3.11); the base's 2.83, which the K=2 variant inherits, is a pinned value."""
    path = _vllm_zip(tmp_path)
    before = path.read_text()
    assert [f[2:] for f in _findings(path)] == [
        ("GAL201", "role decode; branch variant zip_override_k[0]]"),
        ("GAL201", "role decode; branch variant zip_override_k[2]]")]
    assert _refusal(path, ConflictError) == (
        f"{path}:21: synthetic_acceptance_length is already pinned to 2.83, golden value is "
        "2.38; use --force to overwrite")
    assert inject(path, thinking="on", force=True).changed == 1
    assert path.read_text() == before + (
        "          synthetic_acceptance_length: [2.38, 2.83, 3.11]\n")
    assert _findings(path) == []
    assert inject(path, thinking="on").changed == 0


def test_a_vllm_zip_list_is_edited_at_the_index_that_needs_it(tmp_path):
    """Regression: a length list already written in a vLLM zip section was refused ("share
    one speculative-config"); it is edited at the index, as environment lists are."""
    listed = "          synthetic_acceptance_length: [2.38, 2.9, 3.11]\n"
    path = _vllm_zip(tmp_path, listed)
    assert inject(path, thinking="on", force=True).changed == 1
    assert path.read_text().endswith(listed.replace("2.9,", "2.83,"))
    assert _findings(path) == []


def test_distribution_is_refused_for_a_vllm_zip_section_drafting_several_k(tmp_path):
    path = _vllm_zip(tmp_path)
    assert _refusal(path, PolicyError, force=True, distribution=True) == (
        f"{path}:21: --distribution would write one rates list per variant: give each "
        "variant of the zip_override section its own section")


@pytest.mark.parametrize("empty", ["", " ~", " null", " # pinned later"])
def test_a_null_vllm_knob_is_no_knob_and_inject_fills_it_in(tmp_path, empty):
    """Regression (atheris, caught by the read-back): ``synthetic_acceptance_length:`` with
    no value was a pinned value "" to inject (a conflict; with --force, the value spliced
    against the colon, which no longer parsed), and the audit said GAL304 "value 'None'"
    and GAL309.  A null pins nothing: GAL301, and inject writes the value."""
    path = _agentic(tmp_path, "recipe.yaml",
                    VLLM.format(knob=f"synthetic_acceptance_length:{empty}"))
    before = path.read_text()
    assert _findings(path) == [(10, 1, "GAL301", "role decode]")]
    assert inject(path, thinking="on").changed == 1
    value = " 2.83" + (empty if empty.startswith(" #") else "")
    assert path.read_text() == before.replace(f"length:{empty}\n", f"length:{value}\n")
    assert _findings(path) == []


# -- the 2.0 layout -------------------------------------------------------------------------

V2 = """\
schema: 2
name: glm5.2-agentx
model:
  path: glm-5.2-fp8
{engine}roles:
  prefill:
    nodes: 1
    args:
      speculative-algorithm: EAGLE
      speculative-num-steps: 1
  decode:
    nodes: 2
{env}    args:
      speculative-algorithm: EAGLE
      speculative-num-steps: 3
      speculative-eagle-topk: 1
"""
DECODE_ENV = """\
    env:
      SGLANG_ENABLE_THINKING: "1"
      SGLANG_SIMULATE_ACC_LEN: "2.50"
"""


def _v2(tmp_path, engine="engine: sglang\n", env=DECODE_ENV, name="recipe.yaml"):
    return _agentic(tmp_path, name, V2.format(engine=engine, env=env))


@pytest.mark.parametrize("engine", ["engine: sglang\n", "engine:\n  type: sglang\n", ""])
def test_a_2_0_recipe_is_audited_at_its_roles(tmp_path, engine):
    """Regression: a ``roles:`` recipe was no recipe to the audit; its wrong length passed."""
    path = _v2(tmp_path, engine)
    line = 15 + engine.count("\n")
    assert _findings(path) == [(line, 33, "GAL201", "role decode]")]


def test_a_2_0_recipe_without_the_knob_is_a_missing_knob(tmp_path):
    path = _v2(tmp_path, env="")
    assert _findings(path) == [(15, 1, "GAL301", "role decode]")]


# a 2.0 recipe with a base section: one aggregated role drafting K=3
V2_BASE = """\
schema: 2
base:
  name: glm5.2-agentx
  model:
    path: glm-5.2-fp8
  engine: {type: sglang}
  roles:
    agg:
      env:
        SGLANG_ENABLE_THINKING: "1"
        SGLANG_SIMULATE_ACC_LEN: "2.99"
      args:
        speculative-algorithm: EAGLE
        speculative-num-steps: 3
"""


def test_a_2_0_variant_is_layered_over_its_base(tmp_path):
    path = _agentic(tmp_path, "agg.yaml", V2_BASE + """\
override_k2:
  roles:
    agg:
      args:
        speculative-num-steps: 2
""")
    assert _findings(path) == [(11, 35, "GAL201", "role aggregated; branch variant override_k2]")]
    assert inject(path, thinking="on").changed == 2
    assert path.read_text().endswith("""\
        speculative-num-steps: 2
      env:
        SGLANG_SIMULATE_ACC_LEN: "2.50"
        SGLANG_SIMULATE_ACC_METHOD: "match-expected"
        SGLANG_SIMULATE_ACC_TOKEN_MODE: "real-draft-token"
""")
    assert _findings(path) == []


def test_a_2_0_zip_section_gets_its_list_in_the_role_env(tmp_path):
    path = _agentic(tmp_path, "agg.yaml", V2_BASE + """\
zip_override_k:
  roles:
    agg:
      args:
        speculative-num-steps: [2, 3]
""")
    assert _findings(path) == [(11, 35, "GAL201", "role aggregated; branch variant "
                                                  "zip_override_k[0]]")]
    assert inject(path, thinking="on").changed == 2
    assert path.read_text().endswith("""\
        speculative-num-steps: [2, 3]
      env:
        SGLANG_SIMULATE_ACC_LEN: ["2.50", "2.99"]
        SGLANG_SIMULATE_ACC_METHOD: "match-expected"
        SGLANG_SIMULATE_ACC_TOKEN_MODE: "real-draft-token"
""")
    assert _findings(path) == []


def test_inject_gives_a_2_0_role_without_one_an_env_block(tmp_path):
    path = _v2(tmp_path, env="")
    assert inject(path, thinking="on").changed == 2
    assert path.read_text() == V2.format(engine="engine: sglang\n", env="").replace(
        "      speculative-num-steps: 1\n",
        "      speculative-num-steps: 1\n    env:\n" + _ENV3.format("2.99")).replace(
        "      speculative-eagle-topk: 1\n",
        "      speculative-eagle-topk: 1\n    env:\n" + _ENV3.format("2.99"))


_ENV3 = ('      SGLANG_SIMULATE_ACC_LEN: "{}"\n'
         '      SGLANG_SIMULATE_ACC_METHOD: "match-expected"\n'
         '      SGLANG_SIMULATE_ACC_TOKEN_MODE: "real-draft-token"\n')


@pytest.mark.parametrize("before,after,line,message", [
    ("  decode:\n    nodes: 2\n", "  aggregated:\n    nodes: 2\n", 12,
     "unknown role 'aggregated': srtctl's roles are prefill, decode and agg"),
    ("  decode:\n    nodes: 2\n", "  decode:\n    engine: vllm\n    nodes: 2\n", 13,
     "the roles name two engines, 'sglang' and 'vllm': srtctl runs one engine per recipe"),
])
def test_roles_srtctl_refuses_are_a_parse_finding(tmp_path, before, after, line, message):
    path = _v2(tmp_path)
    path.write_text(path.read_text().replace(before, after))
    assert _findings(path) == [(line, 1, "GAL306", f"cannot parse recipe: {message}")]


def test_a_yaml_with_roles_but_no_engine_or_schema_is_no_recipe(tmp_path):
    # an Ansible playbook: ``roles:`` alone does not make a recipe
    path = _agentic(tmp_path, "site.yaml", "- hosts: all\n  roles:\n    - common\n")
    assert _findings(path) == []


def test_a_2_0_recipe_of_vllm_is_read_at_its_roles_args(tmp_path):
    path = _agentic(tmp_path, "minimax-m3-agentic.yaml", """\
schema: 2
model:
  path: MiniMaxAI/MiniMax-M3
engine:
  type: vllm
roles:
  agg:
    args:
      speculative-config: '{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3","num_speculative_tokens":3,"synthetic_acceptance_length":2.78}'
""")
    assert _findings(path) == [(9, 27, "GAL205", "role aggregated]")]
    assert inject(path, thinking="on", force=True).changed == 1
    assert '"synthetic_acceptance_length":2.83,"rejection_sample_method":"synthetic"}' in \
        path.read_text()


# -- sweeps ---------------------------------------------------------------------------------

SWEEP = """\
name: glm5.2-agentx
model:
  path: glm-5.2-fp8
backend:
  type: sglang
  decode_environment:
    SGLANG_ENABLE_THINKING: "1"
    SGLANG_SIMULATE_ACC_LEN: {al}
  sglang_config:
    decode:
      speculative-algorithm: EAGLE
      speculative-num-steps: "{{k}}"
sweep:
  k: [2, 3]
{params}"""


def _sweep(tmp_path, al='"{al}"', params='  al: ["2.50", "2.99"]\n'):
    return _agentic(tmp_path, "sweep.yaml", SWEEP.format(al=al, params=params))


def test_every_combination_of_a_sweep_is_audited(tmp_path):
    """Regression: ``speculative-num-steps: "{k}"`` made a valid sweep recipe unreadable
    (GAL306, an error) and its values unchecked."""
    path = _sweep(tmp_path)
    assert _findings(path) == [
        (8, 30, "GAL201", "role decode; branch variant sweep[k=3, al=2.50]]"),
        (8, 30, "GAL201", "role decode; branch variant sweep[k=2, al=2.99]]"),
    ]


def test_a_sweep_value_is_written_as_python_writes_it():
    root = spans.compose('a: "{x}-{y}-{z}"\nb: "{l}"\nc: "n{l}"\nsweep:\n'
                         '  x: [2.50]\n  y: [true]\n  z: ["2.50"]\n  l: [[p, 1]]\n')
    combo = {key.value: values.value[0] for key, values in spans.pairs(spans.get(root, "sweep"))}
    swept = spans.Swept(root, combo)
    assert spans.to_python(swept) == {"a": "2.5-True-2.50", "b": ["p", 1], "c": "np,1"}
    assert spans.get(swept, "a").templated and spans.get(swept, "a").start_mark.line == 0


@pytest.mark.parametrize("params,line,message", [
    ("  al: 2.50\n", 15, "a sweep parameter is a non-empty list of values"),
    ("  al: []\n", 15, "a sweep parameter is a non-empty list of values"),
    ("  a: [1, 2, 3, 4, 5, 6, 7, 8]\n  b: [1, 2, 3, 4, 5, 6, 7, 8]\n  c: [1, 2, 3]\n", 14,
     "a sweep of 384 combinations; goldenal reads at most 256"),
    # a template repeating a long value: memory, not a recipe
    ("  al: ['" + "y" * 100 + "']\n", 8, "a sweep template expands past 65536 characters"),
])
def test_a_sweep_srtctl_refuses_or_too_large_to_read_is_a_parse_finding(
        tmp_path, params, line, message):
    al = '"' + "{al}" * 1000 + '"' if "expands" in message else '"{al}"'
    path = _sweep(tmp_path, al=al, params=params)
    assert _findings(path) == [(line, 1, "GAL306", f"cannot parse recipe: {message}")]


def test_inject_leaves_a_sweep_template_alone(tmp_path):
    path = _sweep(tmp_path)
    assert _refusal(path, PolicyError, force=True) == (
        f'{path}:8: this value comes from a sweep template ("{{al}}"): set it in the sweep\'s '
        "lists; goldenal does not rewrite a template")


def test_inject_refuses_one_literal_for_combinations_that_need_two(tmp_path):
    path = _sweep(tmp_path, al='"2.99"', params="")
    assert _refusal(path, PolicyError, force=True) == (
        f"{path}:12: roles decode of sweep[k=2] (K=2) and decode of sweep[k=3] (K=3) share one "
        "environment block (anchor/alias, inherited, or written for every variant) but need "
        "different values 2.50 and 2.99; give each role its own")


def test_inject_gives_a_sweep_without_an_environment_one_block_or_refuses(tmp_path):
    """Regression (atheris, caught by the read-back): each combination of a sweep drafting
    K=2 and K=3 without a ``decode_environment`` planned a block of its own at one place,
    and the rewritten file held ``decode_environment:`` twice.  One block serves every
    combination: one value for all of them, or a refusal."""
    path = _sweep(tmp_path, params="")
    text = path.read_text()
    start = text.index("  decode_environment:\n")
    before = text[:start] + text[text.index("  sglang_config:\n"):]
    path.write_text(before)
    assert _refusal(path, PolicyError) == (
        f"{path}:9: roles decode of sweep[k=2] (K=2) and decode of sweep[k=3] (K=3) share one "
        "environment block (anchor/alias, inherited, or written for every variant) but need "
        "different values 2.50 and 2.99; give each role its own")
    path.write_text(before.replace("k: [2, 3]", "k: [3, 3]"))
    assert inject(path, thinking="on").changed == 1
    assert path.read_text().count("decode_environment:") == 1
