"""The records are the one source of each engine's facts.

(a) every knob, metric, count field and log name of a record is spelled under goldenal/ only
in the engine's own module (or in those of the engines whose records print the same word);
the compiled log scan's copy of vLLM's line equals the record's; (b) an engine made of a
record (tests/toy_engine.py), added to the registry as docs/architecture.md ("Adding an
engine") says, is looked up, emitted, spelled in the recipe table and read back from a script
that launches it.
"""

import pathlib
import re

import pytest

import goldenal
from goldenal.engines import knobs, table
from goldenal.engines.knobs import MODULES

ROOT = pathlib.Path(goldenal.__file__).parent
# a curve's sampling-variant key (golden files, the policy) that vLLM also reads as a knob
VARIANT_KEYS = {"rejection_sample_method"}
# goldenal's own words that engines spell too: a fit's field (vLLM's per-request mean), the
# /metrics endpoint and Prometheus reader (the mapping vLLM's per-request counts sit in), the
# plot title (vLLM's and SGLang's bench clients print it), the key measure's request records
# keep llama.cpp's per-request counts under, the --distribution option and its variables
# (ATOM's steps by drafts accepted), the other sampling-variant key, a curve file's K key and
# its header's speculative-config mapping, a method name, its options, common words
OWN_WORDS = {"mean_acceptance_length", "metrics", "Acceptance length", "timings",
             "distribution", "dist", "draft_sample_method", "num_speculative_tokens",
             "speculative-config", "speculative_config", "draft_model", "--model", "--method",
             "model", "method", "-m"}
# the compiled log scan spells vLLM's current line in C; its copy is checked against the
# record by test_the_compiled_scan_spells_the_records_line
C_SCAN = "readers/_logscan.c"
# the settings a recipe spells that the audit reads besides the knobs
READ_SETTINGS = ("k", "method", "draft", "model", "served", "topk", "one_model")
# the CLI help prose that shows these names in examples, as docs/*.md do; no other module may
SPELLED_ELSEWHERE = {
    "--spec-draft-n-max": {"commands/measure.py"},
    "--spec-draft-model": {"commands/measure.py"},
    "--spec-type": {"commands/measure.py"},
    "trtllm-serve": {"commands/inject.py"}}


def record_names(rec):
    """Every knob, metric, per-request count field and log name of a record, and every name
    the audit reads a recipe for: K, method, draft and served model, how a config nests them."""
    carriers = ("length", "rates", "rate", "token_mode", "acc_method")
    names = set(rec.knobs) | {row[0] for row in rec.spellings if row[1] in carriers}
    names |= set(rec.metrics.values()) | ({rec.env_knob} if rec.env_knob else set())
    names |= {name for fields in (rec.count_fields, rec.log_lines)
              for names in fields.values() for name in names}
    names |= {row[0] for row in rec.spellings if row[1] in READ_SETTINGS} | set(rec.k_ranks)
    names |= set(rec.sample_keys + rec.spec_config + rec.draft_keys + rec.spec_words)
    names |= {rec.launch_word} if rec.positional_model else set()
    return names - VARIANT_KEYS - OWN_WORDS


def word(name):
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")


def owners(name):
    """The engine modules whose records hold ``name``, alone or inside a longer name (two
    engines can print or spell the same word)."""
    return {f"engines/{engine}.py" for engine, module in MODULES.items()
            if any(word(name).search(n) for n in record_names(module.RECORD))}


def modules_naming(name, folders=None):
    pattern = word(name)
    files = [p for p in sorted(ROOT.rglob("*")) if p.suffix in (".py", ".c")]
    if folders is not None:
        files = [p for p in files if any(str(p.relative_to(ROOT)).startswith(f) for f in folders)]
    return [str(p.relative_to(ROOT)) for p in files if pattern.search(p.read_text())]


@pytest.mark.parametrize("engine", list(MODULES))
def test_every_name_of_a_record_is_spelled_only_in_its_engine_module(engine):
    own = f"engines/{engine}.py"
    def copies(name):
        held = owners(name) | SPELLED_ELSEWHERE.get(name, set())
        return held | {C_SCAN} if "engines/vllm.py" in held else held

    elsewhere = {name: [m for m in modules_naming(name) if m not in copies(name)]
                 for name in sorted(record_names(MODULES[engine].RECORD))}
    assert {n: m for n, m in elsewhere.items() if m} == {}
    assert all(own in modules_naming(name, ("engines/",)) for name in elsewhere)


def test_the_compiled_scan_spells_the_records_line():
    log = MODULES["vllm"].RECORD.log_lines
    source = (ROOT / C_SCAN).read_text()
    message = source[source.index("static int message("):]
    message = message[:message.index("\n}\n")]
    assert re.search(r'static const char TAG\[\] = "([^"]*)";', source).group(1) == \
        log["tags"][0] + ": "
    assert re.findall(r'literal\(c, "([^"]*)"\)', message) == \
        re.split(r"%[.\d]*[dfs]", "".join(log["line"]).replace("%%", "%"))


def test_the_tables_are_the_records():
    for engine, module in MODULES.items():
        rec = module.RECORD
        assert knobs.KNOBS[engine] == (rec.value_knob, rec.offset)
        assert knobs.KNOB_NAMES[engine] == rec.knobs
        assert [(s.name, s.setting, s.form) for s in table.spellings(engine)] == \
            [row[:3] for row in rec.spellings]
        assert [(w, p.pattern) for e, w, p in table.LAUNCHES if e == engine] == \
            list(rec.launches)


@pytest.fixture
def toy(monkeypatch):
    """The toy engine in the registry: one entry of MODULES (the tuple in engines/knobs.py)."""
    import toy_engine

    monkeypatch.setitem(MODULES, "toy", toy_engine)
    monkeypatch.setattr(table, "SPELLINGS", table._rows())
    monkeypatch.setattr(table, "LAUNCHES", table.LAUNCHES + (
        ("toy", "toy-serve", re.compile(toy_engine.RECORD.launches[0][1])),))
    return toy_engine


def test_a_toy_engine_gets_a_lookup_value_through_its_knob_and_unit(toy):
    assert goldenal.engines.knob_value("toy", "2.83") == "1.83"
    assert goldenal.engines.env_assignment("toy", "2.83") == "TOY_FORCE_ACCEPTED=1.83"
    with pytest.raises(goldenal.PolicyError, match="TOY_FORCE_ACCEPTED=0.00, which Toy reads"):
        goldenal.engines.knob_value("toy", "1.00")
    with pytest.raises(ValueError, match="must be length or rate"):
        goldenal.engines.knob_value("toy", "2.83", k=3, form="rate")


def test_a_toy_engine_gets_an_emit_fragment(toy):
    frag = goldenal.emit("minimax-m3", engine="toy", k=3, thinking="on",
                         draft="Inferact/MiniMax-M3-EAGLE3")
    assert (frag.text, frag.knob, frag.value, frag.al) == (
        "export TOY_FORCE_ACCEPTED=1.83", "TOY_FORCE_ACCEPTED", "1.83", "2.83")
    with pytest.raises(goldenal.UsageError, match="`distribution` is for vLLM"):
        goldenal.emit("minimax-m3", engine="toy", k=3, thinking="on",
                      draft="Inferact/MiniMax-M3-EAGLE3", distribution=True)


def test_a_toy_engine_is_spelled_in_the_recipe_table_and_read_back(toy, tmp_path):
    row = table.spelling("toy", "TOY_FORCE_ACCEPTED")
    assert (row.setting, row.form) == ("length", "env")
    script = tmp_path / "serve_toy.sh"
    script.write_text("export TOY_FORCE_ACCEPTED=1.83\n# toy-serve --old\n"
                      "toy-serve --model m --toy-draft-len 3\n")
    assert table.launched_engines(script.read_text()) == ("toy",)
    (found,) = goldenal.engines.read_settings(script)
    assert (found.engine, found.knob, found.value, found.k, found.line) == (
        "toy", "TOY_FORCE_ACCEPTED", "1.83", 3, 1)


def engine_branches(text, names):
    """Lines of ``text`` comparing a value with an engine's name, keying a dict with one, or
    selecting an engine's rows of the knob table by name."""
    spelled = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    quoted = rf"""['"](?:{spelled})['"]"""
    pattern = re.compile(rf"""[!=]=\s*{quoted}|{quoted}\s*[!=]=|\bin\s*[(\[{{]\s*{quoted}"""
                         rf"""|{quoted}\s*:(?!=)"""
                         rf"""|\bspellings?\(\s*(?:engine\s*=\s*)?\(?\s*{quoted}""")
    return [no for no, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def test_no_module_but_the_engines_own_branches_on_an_engine_name():
    names = {n for m in MODULES.values() for n in (m.RECORD.name, *m.RECORD.aliases)}
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel in {f"engines/{n}.py" for n in MODULES}:
            continue
        offenders += [f"{rel}:{no}" for no in engine_branches(path.read_text(), names)]
    assert not offenders, ("branching on an engine's name outside goldenal/engines/<engine>.py: "
                           + ", ".join(offenders))


def test_the_engine_branch_pattern_sees_each_form():
    lines = ['if engine == "vllm":', "x = e != 'atom'", 'if e in ("sglang", "x"):',
             'TABLE = {"trtllm": 1}', 'y = "dynamo-trt" == e', 'ok = {"vllm", "x"}', 'z = "vllm"',
             'rows = knobs.spellings(engine=("vllm", "atom"))', 'row = spelling("atom", "--m")',
             'rows = spellings(engine=ENV_CARRIED)']
    assert engine_branches("\n".join(lines), {"vllm", "atom", "sglang", "trtllm",
                                              "dynamo-trt"}) == [1, 2, 3, 4, 5, 8, 9]
