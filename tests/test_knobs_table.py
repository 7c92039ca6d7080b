"""The one knob-in-text table (goldenal.recipes.knobs), read by inject and audit alike."""

import pytest
from hypothesis import given, strategies as st

from goldenal.engines.atom import read_command_settings as atom_settings
from goldenal.engines.knobs import KNOB_NAMES, KNOBS, RUNNER_VARIABLE
from goldenal.engines.shell import read_shell_settings
from goldenal.auditing.shell import script_configs
from goldenal.engines import table as knobs


def _one(text, engine, name):
    (found,) = knobs.finditer(text, knobs.spellings(engine, names=(name,)))
    return found


def test_every_engine_knob_name_is_spelled_in_the_table():
    names = {(s.engine, s.name) for s in knobs.SPELLINGS}
    for engine, spelled in KNOB_NAMES.items():
        for name in spelled:
            if name != "rejection_sample_method":       # a sampling setting, read elsewhere
                assert (engine, name) in names, name
    for engine, (name, _) in KNOBS.items():
        assert (engine, name) in names
    assert ("runner", RUNNER_VARIABLE) in names


def test_every_row_is_one_form_of_one_spelling():
    keys = [(s.engine, s.name, s.form) for s in knobs.SPELLINGS]
    assert len(keys) == len(set(keys))
    for s in knobs.SPELLINGS:
        assert s.form in (knobs.FLAG, knobs.ENV, knobs.KEY)
        assert {"name", "sep", "q", "value"} <= set(s.pattern.groupindex)


@pytest.mark.parametrize("text, engine, name, value, whole", [
    ("--spec-decode-acceptance-length 2.49 --x", "atom", "--spec-decode-acceptance-length",
     "2.49", "--spec-decode-acceptance-length 2.49"),
    ("--spec-decode-acceptance-length=2.49", "atom", "--spec-decode-acceptance-length",
     "2.49", "--spec-decode-acceptance-length=2.49"),
    ('--spec-decode-acceptance-rate "$RATE" \\', "atom", "--spec-decode-acceptance-rate",
     "$RATE", '--spec-decode-acceptance-rate "$RATE"'),
    ("--num-speculative-tokens \\\n    ${K} --x", "atom", "--num-speculative-tokens", "${K}",
     "--num-speculative-tokens \\\n    ${K}"),
    ("--dspark-config '{\"ragged\": true}' --x", "atom", "--dspark-config",
     "'{\"ragged\": true}'", "--dspark-config '{\"ragged\": true}'"),
    ("llama-server --spec-synth-rates 1,0.83,0 --port 8", "llamacpp", "--spec-synth-rates",
     "1,0.83,0", "--spec-synth-rates 1,0.83,0"),
    ("export LLAMA_ARG_SPEC_SYNTH_LEN='2.83'", "llamacpp", "LLAMA_ARG_SPEC_SYNTH_LEN", "2.83",
     "LLAMA_ARG_SPEC_SYNTH_LEN='2.83'"),
    ("-md /models/draft.gguf -m /models/target.gguf", "llamacpp", "-m",
     "/models/target.gguf", "-m /models/target.gguf"),
    ("SGLANG_SIMULATE_ACC_LEN=${GOLDEN_AL} python", "sglang", "SGLANG_SIMULATE_ACC_LEN",
     "${GOLDEN_AL}", "SGLANG_SIMULATE_ACC_LEN=${GOLDEN_AL}"),
    ("    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: '1.78'  # AL 2.78", "trtllm",
     "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "1.78",
     "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: '1.78'"),
    ("--speculative-config '{\"method\":\"mtp\",\"synthetic_acceptance_length\":2.83}'",
     "vllm", "synthetic_acceptance_length", "2.83", '"synthetic_acceptance_length":2.83'),
    ('SPEC="{\\"num_speculative_tokens\\": 3, \\"synthetic_acceptance_length\\": %.2f}"',
     "vllm", "synthetic_acceptance_length", "%.2f", '\\"synthetic_acceptance_length\\": %.2f'),
    ("  synthetic_acceptance_rates: [0.79, 0.6, 0.39]", "vllm", "synthetic_acceptance_rates",
     "[0.79, 0.6, 0.39]", "synthetic_acceptance_rates: [0.79, 0.6, 0.39]"),
    ("--speculative-config.synthetic_acceptance_length=2.5", "vllm",
     "synthetic_acceptance_length", "2.5", "synthetic_acceptance_length=2.5"),
    ("{'synthetic_acceptance_length': 2.8}, 'max_model_len': 8", "vllm",
     "synthetic_acceptance_length", "2.8", "'synthetic_acceptance_length': 2.8"),
])
def test_spellings_capture_the_value_as_written(text, engine, name, value, whole):
    row, m = _one(text, engine, name)
    assert m.group("name") == name
    assert m.group("value") == value
    assert text[row.start(m):m.end()] == whole


def test_a_spelling_is_not_read_inside_a_longer_name():
    row = knobs.spelling("atom", "--model")
    assert knobs.finditer("--draft-model d --model-path p", (row,)) == []
    assert knobs.finditer("x --spec-decode-acceptance-rates 0.5",
                          (knobs.spelling("atom", "--spec-decode-acceptance-rate"),)) == []
    assert knobs.finditer("speculative_max_draft_len: 3",
                          (knobs.spelling("trtllm", "max_draft_len"),)) == []


@pytest.mark.parametrize("text, commented", [
    ("# --spec-synth-len 2.5", True),
    ("llama-server -m m.gguf  # --spec-synth-len 2.5", True),
    ("llama-server --chat '#x' --spec-synth-len 2.5", False),
    ('echo "$#" --spec-synth-len 2.5', False),
    ("a#b --spec-synth-len 2.5", False),
])
def test_comments_are_read_by_the_shell_lexer(text, commented):
    at = text.index("--spec-synth-len")
    assert knobs.commented(text, at) is commented
    rows = knobs.spellings("llamacpp", names=("--spec-synth-len",))
    assert len(knobs.finditer(text, rows)) == (0 if commented else 1)


_NUMBER = st.decimals(min_value=0, max_value=100, places=2).map(str)


@given(_NUMBER, st.sampled_from([r for r in knobs.SPELLINGS
                                 if r.setting in (knobs.LENGTH, knobs.RATE, knobs.K)]),
       st.sampled_from(["", "'", '"']), st.sampled_from([" ", "=", " \\\n  ", "\t"]))
def test_every_scalar_spelling_reads_back_what_was_written(value, row, quote, sep):
    written = f"{quote}{value}{quote}"
    if row.form == knobs.FLAG:
        text = f"serve {row.name}{sep}{written} --next"
    elif row.form == knobs.ENV:
        text = f"export {row.name}={written}"
    else:
        text = f'  "{row.name}": {written},' if quote != '"' else f"  {row.name}: {written}"
    (found,) = knobs.finditer(text, (row,))
    m = found[1]
    assert m.group("value") == value
    assert m.group("q") == quote
    assert text[m.start("value"):m.end("value")] == value
    assert m.group().endswith(written)


def test_inject_and_audit_read_the_same_knob_from_one_script():
    text = ('MODEL=Qwen/Qwen3-8B\n'
            'SPEC="{\\"method\\": \\"eagle3\\", \\"num_speculative_tokens\\": 3, '
            '\\"synthetic_acceptance_length\\": 2.49}"\n'
            'vllm serve "$MODEL" --speculative-config "$SPEC"\n')
    (setting,) = read_shell_settings("x.sh", text)
    (config,) = script_configs("x.sh", text, text.splitlines())
    assert (setting.knob, setting.value, setting.k) == ("synthetic_acceptance_length", "2.49", 3)
    assert (config.knob, config.value, config.k) == ("synthetic_acceptance_length", "2.49", 3)


def test_audit_reads_a_quoted_value_in_a_command_prefix():
    # regression: ``NAME="v"`` after ``env`` was missed (only bare values were read)
    text = ('env SGLANG_SIMULATE_ACC_LEN="2.5" python -m sglang.launch_server '
            '--model Qwen/Qwen3-8B --speculative-num-steps 3\n')
    (config,) = script_configs("x.sh", text, text.splitlines())
    assert (config.knob, config.value, config.line, config.col, config.k, config.engine) == (
        "SGLANG_SIMULATE_ACC_LEN", "2.5", 1, 5, 3, "sglang")


def test_inject_skips_a_knob_in_a_trailing_comment():
    # regression: only a line starting with ``#`` counted as a comment
    text = ("export SGLANG_SIMULATE_ACC_LEN=2.49\n"
            "python -m sglang.launch_server  # was SGLANG_SIMULATE_ACC_LEN=9.99\n")
    assert [(s.knob, s.value, s.line) for s in read_shell_settings("x.sh", text)] == [
        ("SGLANG_SIMULATE_ACC_LEN", "2.49", 1)]


def test_atom_reads_a_flag_after_a_hash_inside_quotes():
    # regression: any ``#`` before a flag on its line hid the flag, quoted or not
    text = ("python -m atom.entrypoints --chat-template-kwargs '{\"tag\": \"#1\"}' "
            "--num-speculative-tokens 3 --spec-decode-acceptance-length 2.49\n")
    (s,) = atom_settings("x.sh", text)
    assert (s.knob, s.value, s.k) == ("--spec-decode-acceptance-length", "2.49", 3)



def test_every_knob_spelling_passes_the_audits_byte_prefilter():
    from goldenal.auditing.evidence import KNOB_BYTES

    for row in knobs.spellings(setting=(knobs.LENGTH, knobs.RATES, knobs.RATE)):
        assert any(word in row.name.encode() for word in KNOB_BYTES), row.name


def test_the_table_compiles_a_pattern_when_first_used():
    # importing the table (every CLI run does) compiles none of its regexes
    import subprocess
    import sys

    code = ("import goldenal.auditing.runner, goldenal.auditing.shell, goldenal.auditing.recipe\n"
            "from goldenal.engines import table as knobs\n"
            "print(sum('pattern' in r.__dict__ or 'head' in r.__dict__ for r in knobs.SPELLINGS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "0\n"
    row = knobs._rows()[0]
    assert "pattern" not in row.__dict__
    assert row.search("x synthetic_acceptance_length: 2.5").group("value") == "2.5"
    assert row.pattern is row.__dict__["pattern"]
    assert row.pattern.pattern == row.head_source + row.value_source


@given(st.lists(st.text(alphabet="ab\n#=", max_size=12), max_size=8),
       st.lists(st.text(alphabet="ab#=", min_size=1, max_size=3), min_size=1, max_size=3))
def test_lines_naming_finds_exactly_the_lines_holding_a_name(lines, names):
    lines = "\n".join(lines).split("\n")
    assert knobs.lines_naming(lines, names) == [
        i for i, line in enumerate(lines) if any(name in line for name in names)]
