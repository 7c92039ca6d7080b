"""The audit's byte prefilters change nothing but the time: findings identical with and without.

Every shortcut taken before a file is decoded or parsed (the one-pass search
for knob and setting names in :mod:`goldenal.auditing.walk`) is switched off here
and the whole audit compared, over every test fixture and over the
InferenceX-shaped tree that ``benchmarks/audit_vs_grep.py`` measures.
"""

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.auditing import audit_report
from goldenal.auditing import evidence as ev
from goldenal.auditing import shell as lint_shell
from goldenal.auditing import walk

HERE = os.path.dirname(__file__)
DATA = os.path.join(HERE, "data")
ROOT = os.path.dirname(HERE)
NAMES = ev.KNOB_BYTES + ev.SPEC_BYTES + (b"goldenal:",)


def _naive(data):
    return any(name in data for name in NAMES)


def _naive_groups(data):
    # every file goes on, each name tested in turn
    return tuple(any(n in data for n in group)
                 for group in (ev.KNOB_BYTES, ev.SPEC_BYTES, (b"goldenal:",)))


def _fast(data):
    named = walk.names_in(data)
    return named is not None, named


def _report(root):
    r = audit_report([str(root)], settings=False)
    return r.findings, r.files_read, r.configs_checked, r.skipped


def _without_shortcuts(monkeypatch):
    """Every file through the naive name test, every config checked afresh (no reuse of
    a copy's findings)."""
    from goldenal.auditing import check, runner

    monkeypatch.setattr(walk, "names_in", _naive_groups)
    monkeypatch.setattr(runner, "_checked", check.check_config)


@pytest.fixture(scope="module")
def recipe_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("ix") / "tree"
    subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "make_recipe_tree.py"),
                    str(root)], check=True, stdout=subprocess.DEVNULL)
    return root


def _files(root):
    for base, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            with open(os.path.join(base, name), "rb") as fh:
                yield os.path.join(base, name), fh.read()


def test_one_pass_search_answers_as_each_name_in_turn(recipe_tree):
    seen = 0
    for root in (DATA, recipe_tree):
        for path, data in _files(root):
            assert _fast(data) == (_naive(data), _naive_groups(data) if _naive(data) else None), path
            seen += 1
    assert seen > 1400


@settings(max_examples=300)
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(NAMES),
                          st.sampled_from(NAMES).map(lambda n: n[:-1]),
                          st.sampled_from(NAMES).map(lambda n: n[1:])), max_size=8))
def test_one_pass_search_property(parts):
    # names cut short by a byte, overlapping and back to back, among arbitrary bytes
    data = b"".join(parts)
    assert _fast(data) == (_naive(data), _naive_groups(data) if _naive(data) else None)


@pytest.mark.parametrize("sub", sorted(d for d in os.listdir(DATA)
                                        if os.path.isdir(os.path.join(DATA, d))))
def test_fixtures_audit_the_same_without_shortcuts(sub, monkeypatch):
    root = os.path.join(DATA, sub)
    fast = _report(root)
    _without_shortcuts(monkeypatch)
    assert _report(root) == fast


def test_recipe_tree_audits_the_same_without_shortcuts(recipe_tree, monkeypatch):
    fast = _report(recipe_tree)
    assert len(fast[0]) > 1000
    _without_shortcuts(monkeypatch)
    assert _report(recipe_tree) == fast


def test_llamacpp_env_only_spec_config_is_read(tmp_path):
    # the first cheap gate knew llama.cpp only by its flags (spec-draft-*), so an agentic
    # launcher configured through LLAMA_ARG_SPEC_DRAFT_* alone was never opened
    script = tmp_path / "benchmarks" / "single_node" / "agentic" / "qwen3_llamacpp.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/usr/bin/env bash\n"
                      "export LLAMA_ARG_SPEC_DRAFT_N_MAX=3\n"
                      "llama-server -m /models/Qwen3-8B-Q4_K_M.gguf "
                      "-md /models/Qwen3-0.6B-Q8_0.gguf --port 8000 &\n"
                      "python3 -m sglang.bench_serving --backend llama.cpp --port 8000\n")
    r = audit_report([str(tmp_path)], settings=False)
    assert [(f.code, f.path, f.line) for f in r.findings] == [
        ("GAL301", "benchmarks/single_node/agentic/qwen3_llamacpp.sh", 2)]
    assert r.configs_checked == 1


def test_vllm_spec_shorthand_launcher_is_read(tmp_path):
    # regression: the setting names were written by hand, without vLLM's --spec-tokens, so
    # an agentic launcher using the --spec-* shorthand and no knob was never opened
    script = tmp_path / "benchmarks" / "agentic" / "minimaxm3_fp4_b200_vllm_mtp.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/usr/bin/env bash\n"
                      "vllm serve nvidia/MiniMax-M3-NVFP4 --spec-method eagle3 \\\n"
                      "  --spec-model Inferact/MiniMax-M3-EAGLE3 --spec-tokens 3 --port 8000\n")
    r = audit_report([str(tmp_path)], settings=False)
    assert [(f.code, f.line) for f in r.findings] == [("GAL301", 2)]


def test_every_k_spelling_and_speculative_mapping_passes_the_prefilter():
    from goldenal.engines import table
    from goldenal.engines.knobs import MODULES

    names = [s.name for s in table.SPELLINGS if s.setting == table.K]
    names += [k for m in MODULES.values() for k in m.RECORD.spec_config]
    assert [n for n in names if walk.names_in(f"x {n} 3".encode()) is None] == []


_LINE = st.lists(st.sampled_from(["SYNTHETIC_ACCEPTANCE_LENGTH", "SGLANG_SIMULATE_ACC_LEN",
                                  "--spec-decode-acceptance-rate", "synthetic_acceptance_rates",
                                  "=", ":", " ", "\t", '\\"', "'", "2.5", "x", "# "]),
                 max_size=6).map("".join)


@settings(max_examples=300)
@given(st.lists(_LINE, max_size=8))
def test_gal309_lines_are_every_line_a_knob_is_set_on(lines):
    from goldenal.auditing.runner import _KNOB_NAMES
    from goldenal.recipes import knobs

    found = knobs.lines_naming(lines, _KNOB_NAMES)
    assert found == sorted({i for i, text in enumerate(lines)
                            if any(n in text for n in _KNOB_NAMES)})
    assert {i for i, text in enumerate(lines) if knobs.first_set(text, ev.VALUE_ROWS)} <= set(found)


_GLOB = st.lists(st.sampled_from(["a", "b", "*", "**", "?", "[ab]", "x.py", "__pycache__",
                                  ".coverage", "/", "!", "\\#", "#", " "]),
                 min_size=1, max_size=5).map("".join)
_PATH = st.lists(st.sampled_from(["a", "b", "x.py", "__pycache__", ".coverage", "ab", "c"]),
                 min_size=1, max_size=4).map("/".join)


@settings(max_examples=400)
@given(st.lists(_GLOB, max_size=6), _PATH, st.booleans())
def test_gitignore_regex_in_front_answers_as_pathspec(lines, path, is_dir):
    import pathspec

    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:           # a pattern pathspec refuses is refused the same way
        with pytest.raises(Exception):
            walk._Ignore(lines)
        return
    path += "/" if is_dir else ""
    assert walk._Ignore(lines).check(path) == spec.check_file(path).include


def test_gitignore_patterns_are_joined_into_one_regex():
    # InferenceX's own .gitignore (843c6254), and a negation
    ignore = walk._Ignore(["**/__pycache__/**", "**/.coverage",
                           "experimental/multiturn/vllm_benchmark/results/", "!keep.pyc",
                           "*.pyc", "# a comment", ""])
    assert ignore.any is not None
    assert ignore.check("benchmarks/x.sh") is None
    assert ignore.check("a/__pycache__/m.cpython-311.pyc") is True
    assert ignore.check("experimental/multiturn/vllm_benchmark/results/") is True
    assert ignore.check("keep.pyc") is True     # the later *.pyc wins, as in git


def _hit_lines_by_find(text):
    from goldenal.auditing.shell import _INTERESTING_WORDS

    out = set()
    for word in _INTERESTING_WORDS:
        i = text.find(word)
        while i >= 0:
            out.add(text.count("\n", 0, i) + 1)
            i = text.find(word, i + 1)
    return out


_SCRIPT = st.lists(st.sampled_from(["--model", "speculative", "THINK", "think", "model:", "é",
                                    "DRAFTDRAFT", "spec-draft", "$K", "${MODEL}", " ", "\n",
                                    "=", '"', "x"]), max_size=20).map("".join)


@settings(max_examples=400)
@given(_SCRIPT)
def test_evidence_words_found_in_one_pass_as_by_each_word(text):
    from goldenal.auditing.shell import _hit_lines, _word_matches, _INTERESTING_WORDS

    assert _hit_lines(text) == _hit_lines_by_find(text)
    by_find = sorted((i + len(w)) for w in _INTERESTING_WORDS
                     for i in range(len(text)) if text.startswith(w, i))
    assert sorted(end for _, _, end in _word_matches(text)) == by_find


def test_cells_by_value_answer_as_a_scan_of_every_cell():
    from decimal import Decimal

    from goldenal.auditing.check import _dec, clear_cache, other_cells
    from goldenal.golden.registry import load_registry

    curves = list(load_registry().curves.values())
    clear_cache()
    values = {_dec(t) for c in curves for cells in c.cells.values() for t in cells.values()}
    values.discard(None)
    assert len(values) > 5
    for al in sorted(values) + [Decimal("9.99"), Decimal("2.5000")]:
        scan = [f"{c.id} thinking_{m} K={k}" for c in curves for m, cells in c.cells.items()
                for k, t in sorted(cells.items()) if _dec(t) is not None and _dec(t) == al]
        assert other_cells(curves, al) == scan
        for c in curves[:2]:
            for m, cells in c.cells.items():
                for k in cells:
                    assert other_cells(curves, al, exclude=(c.id, m, k)) == [
                        x for x in scan if x != f"{c.id} thinking_{m} K={k}"]


_YAML_LINE = st.tuples(st.integers(0, 8), st.sampled_from(["a:", "- b:", "- c", "d: 1", "# x",
                                                           "", "-", "e:", "  "])).map(
    lambda t: " " * t[0] + t[1])


@settings(max_examples=300)
@given(st.lists(_YAML_LINE, max_size=40), st.integers(0, 12))
def test_enclosing_lines_are_the_chain_of_nearest_shallower_lines(lines, cut):
    from goldenal.auditing.master import enclosing

    def level(t):
        s = t.lstrip()
        return None if not s or s.startswith("#") else len(t) - len(t.lstrip(" ")) + (
            2 if s.startswith("-") else 0)

    def nearest_below(j, c):
        return next((i for i in range(j - 1, -1, -1)
                     if level(lines[i]) is not None and level(lines[i]) < c), -1)

    found = enclosing(lines, {j: cut for j in range(len(lines))})
    for j in range(len(lines)):
        chain, c, i = [], cut, j
        while (i := nearest_below(i, c)) >= 0:
            c = level(lines[i])
            chain.append((c, i))
        assert found[j] == chain[::-1]


def test_config_with_is_replace():
    import dataclasses

    cfg = ev.Config(path="a.sh", line=3, model=("m",), extra={"x": 1})
    new = cfg.with_(line=4, agentic=True)
    assert new == dataclasses.replace(cfg, line=4, agentic=True)
    assert (new.line, cfg.line, type(new)) == (4, 3, ev.Config)
    assert new.extra is cfg.extra and new.model == ("m",)
    with pytest.raises(TypeError):
        cfg.with_(colour="red")
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.line = 5


@settings(max_examples=500)
@given(st.lists(st.sampled_from(["vllm serve", "vllm.entrypoints", "sglang.launch_server",
                                 "sglang serve", "trtllm-serve", "atom.entrypoints", "-m atom",
                                 "atom serve", "llama-server", "xllama-server", "vllm", "atom",
                                 " ", "-", ".", "m", "serve"]), max_size=6).map("".join))
def test_each_engine_pattern_contains_its_word(text):
    from goldenal.engines.table import LAUNCHES

    for _, word, rx in LAUNCHES:
        if rx.search(text):
            assert word in text


def test_each_group_of_table_rows_is_gated_by_its_own_names():
    """_read_line's gates come from the knob table: a row's pattern starts with its name, so a
    line naming none of a group's rows can match none of them."""
    import re

    from goldenal.auditing.shell import _TABLE_GROUPS, _groups_named

    for group, rows in _TABLE_GROUPS.items():
        for row in rows:
            assert row.pattern.pattern.startswith("(?P<name>" + re.escape(row.name) + ")")
            assert group in _groups_named(f"x {row.name}=1")
    assert _groups_named("llama-server --model m.gguf -m n.gguf") == set()   # a model alone


_TABLE_NAMES = sorted({r.name for rows in lint_shell._TABLE_GROUPS.values() for r in rows})


@settings(max_examples=300)
@given(st.lists(st.sampled_from(_TABLE_NAMES + ["-", "_", "x", " ", "=", "LLAMA_ARG_", "--spec"]),
                max_size=6).map("".join))
def test_groups_are_named_as_a_substring_search_finds_them(text):
    from goldenal.auditing.shell import _TABLE_GROUPS, _groups_named

    assert (_groups_named(text) or set()) == {group for group, rows in _TABLE_GROUPS.items()
                                              if any(r.name in text for r in rows)}


def test_every_name_a_line_is_read_for_holds_a_word_of_the_gate():
    """_read_line skips a line holding no word of _SCAN_GATE, which is built from the records:
    every spelling it reads (all but the runner's, ATOM's DSpark config and llama.cpp's served
    model, read beside its other flags) and every record's launch, config and sampling word."""
    from goldenal.engines import MODULES, table

    gate = lint_shell._SCAN_GATE
    names = [r.name for r in table.SPELLINGS if r.engine != "runner"
             and r.setting != table.DSPARK
             and not (r.setting == table.MODEL and r.engine in lint_shell._REFUSING)]
    for rec in (m.RECORD for m in MODULES.values()):
        names += [w for w, _ in rec.launches] + list(rec.sample_keys + rec.spec_config
                                                     + rec.draft_keys + rec.spec_words)
    # the words _read_line spelled by hand before they came from the records
    names += ["rejection_sample_method", "draft_sample_method", "speculative-config",
              "speculative_config", "draft_model", "speculative_model_dir", "--model-path",
              "--served-model-name", "vllm serve", "trtllm-serve", "--method", "max_draft_len",
              "num_nextn_predict_layers", "--speculative-dspark-block-size"]
    assert [n for n in names if not any(w in n for w in gate)] == []
    assert lint_shell._read_line("no word of it here: x=1") is None
    assert lint_shell._groups_named("  speculative_config:") == set()


def test_a_list_document_naming_a_backend_is_no_recipe(tmp_path):
    # a changelog-shaped list (InferenceX's perf-changelog.yaml names attention_backend:)
    # configures nothing: it is not composed, so its repeated key is no finding, and a
    # knob its prose mentions is found, not checked
    (tmp_path / "perf-changelog.yaml").write_text(
        "# history\n"
        "---\n"
        "- config-keys: [dsv4-fp4-*-vllm]\n"
        "  description: \"pinned via speculative-config attention_backend: FLASH_ATTN\"\n"
        "  description: \"SGLANG_SIMULATE_ACC_LEN=2.49 from the golden curve\"\n")
    r = audit_report([str(tmp_path)], settings=False)
    assert [(f.code, f.line) for f in r.findings] == [("GAL309", 5)]


def test_a_document_that_is_one_scalar_is_no_recipe(tmp_path):
    # a quoted string that names a backend on a line of its own is valid YAML with no
    # mapping: it configures nothing, and composing it is no error
    (tmp_path / "note.yaml").write_text(
        '"see\nbackend:\n  speculative-config: none here"\n')
    r = audit_report([str(tmp_path)], settings=False)
    assert [(f.code, f.line) for f in r.findings] == []
    assert dict(r.skipped) == {"note.yaml": "no serve config found in it"}


def test_a_mapping_naming_a_backend_is_composed_for_its_duplicate_keys(tmp_path):
    (tmp_path / "recipe.yaml").write_text(
        "name: x\n"
        "backend:\n"
        "  type: sglang\n"
        "  sglang_config:\n"
        "    decode: {speculative-algorithm: EAGLE}\n"
        "backend:\n"
        "  type: vllm\n")
    r = audit_report([str(tmp_path)], settings=False)
    assert [(f.code, f.line) for f in r.findings] == [("GAL312", 6)]


def _duplicates_oracle(node, out, seen):
    # every mapping's scalar keys in order; a repeat (but a repeated ``<<`` merge) is a duplicate
    if node is None or id(node) in seen or node.id == "scalar":
        return out
    seen.add(id(node))
    if node.id == "sequence":
        for item in node.value:
            _duplicates_oracle(item, out, seen)
        return out
    first = {}
    for key, value in node.value:
        if key.id != "scalar":
            _duplicates_oracle(key, out, seen)
        elif key.value in first and not (key.value == "<<" and key.tag != "tag:yaml.org,2002:str"):
            out.append((key.start_mark.index, first[key.value].start_mark.index))
        else:
            first.setdefault(key.value, key)
        _duplicates_oracle(value, out, seen)
    return sorted(out)


_KEY = st.sampled_from(["a", "b", '"a"', "'b'", "<<", '"<<"', "!!str <<", "? [x]", "? {a: 1}",
                        "!!str a"])


def _yaml_value(children):
    return st.one_of(
        st.lists(st.tuples(_KEY, children), max_size=4).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.lists(children, max_size=3).map(lambda vs: "[" + ", ".join(vs) + "]"))


@settings(max_examples=1500, deadline=None)
@given(st.recursive(st.sampled_from(["1", "x", "*m"]), _yaml_value, max_leaves=12))
def test_duplicate_keys_are_those_of_each_mapping_in_turn(body):
    # the check of a mapping with no two keys alike (one set) finds what comparing key by key finds
    from goldenal.core.errors import ParseError
    from goldenal.recipes import spans

    try:
        root = spans.compose(f"anchor: &m {{a: 1}}\nbody: {body}\n", duplicates="caller")
    except ParseError:
        return
    found = [(k.start_mark.index, f.start_mark.index) for k, f in spans.duplicate_keys(root)]
    assert found == _duplicates_oracle(root, [], set())


def test_the_line_reader_takes_k_drafts_served_models_and_sampling_from_the_records():
    read = lint_shell._read_line
    # K's precedence is the records' k_ranks: DSpark's block size before SGLang's steps, a
    # JSON config's before vLLM's shorthand, max_draft_len before TensorRT-LLM's layer count
    assert [[r.name for r in rows] for _, rows in lint_shell._K_KINDS] == [
        ["--speculative-dspark-block-size"], ["--speculative-num-steps"],
        ["num_speculative_tokens"], ["--num-speculative-tokens"], ["--spec-tokens"],
        ["max_draft_len"], ["num_nextn_predict_layers"],
        ["--spec-draft-n-max", "LLAMA_ARG_SPEC_DRAFT_N_MAX"]]
    assert dict(read("x --speculative-num-steps 3 --speculative-dspark-block-size 7").ks) == {
        lint_shell._K_KINDS[0][0]: 7, lint_shell._K_KINDS[1][0]: 3}
    # a draft key nested under a speculative mapping (vLLM's, TensorRT-LLM's, ATOM's)
    assert read("speculative_config:").spec_block == 0
    assert [read(f"  {key}: org/D-{i}").nested_draft for i, key in enumerate(
        ("model", "speculative_model_dir", "draft_model"))] == ["org/D-0", "org/D-1", "org/D-2"]
    # the served model: a positional after a launch taking one, a flag, a config-file key
    assert [read(text).model for text in (
        "trtllm-serve org/M1 --port 1", "vllm serve org/M2 --port 1",
        "vllm serve --model org/M3", "python -m sglang.launch_server --model-path org/M4",
        "  served-model-name: org/M5", "atom serve --served-model-name org/M6")] == [
        f"org/M{i}" for i in range(1, 7)]
    said = read("""--speculative-config '{"draft_sample_method": "probabilistic", """
                """"rejection_sample_method": "synthetic"}'""")
    assert (said.dsm, said.rsm) == ("probabilistic", "synthetic")
