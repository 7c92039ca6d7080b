"""llama.cpp as an engine: knob spellings, schedules, inject on launch scripts, log and metrics.

Engine facts from the llama.cpp tree vendored in the llama-cpp-python 0.3.36 sdist
(``common/speculative.cpp``, ``common/arg.cpp``, ``tools/server/*.cpp``); the
captures in tests/data/ingest/llamacpp/ come from a server built from it (see
tests/data/ingest/SOURCES.md).  The end-to-end tests against a running server
are in tests/e2e/.
"""

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.engines.llamacpp import (geometric_rates, min_variance_rates, parse_rates,
                                       rates_problem, read_command_settings)
from goldenal.readers import ingest
from goldenal.readers.observations import ServerStart

DATA = Path(__file__).parent / "data"
LOGS = DATA / "ingest" / "llamacpp"
GOLDEN = DATA / "golden-tiny"
CELL = ["goldenal-tiny", "--k", "3", "--thinking", "on", "--golden-dir", str(GOLDEN)]


# ---- schedules ---------------------------------------------------------------

def test_geometric_schedule_is_llama_cpps_own():
    # llama.cpp's test: L = 3.4, K = 4 resolves to [0.80581, 0.64933, 0.52323, 0.42163]
    assert [round(r, 5) for r in geometric_rates(3.4, 4)] == [0.80581, 0.64933, 0.52323,
                                                              0.42163]
    # and what the server printed (%.6g) for --spec-synth-len 2.83 at K=3 (server_length.log)
    assert [f"{r:.6g}" for r in geometric_rates("2.83", 3)] == ["0.772442", "0.596667",
                                                                "0.460891"]
    assert geometric_rates(4, 3) == [1.0, 1.0, 1.0] and geometric_rates(1, 3) == [0.0] * 3


@settings(max_examples=200, deadline=None)
@given(k=st.integers(1, 8), u=st.floats(0, 1))
def test_geometric_schedule_has_the_mean_and_is_geometric(k, u):
    al = 1 + u * k
    rates = geometric_rates(al, k)
    assert abs(1 + sum(rates) - al) < 1e-6 * k
    assert rates_problem(rates, k) is None
    if rates[0] > 0:
        assert all(math.isclose(b / a, rates[0], rel_tol=1e-9) for a, b in zip(rates, rates[1:])
                   if a > 1e-300)


def test_min_variance_rates_and_validation():
    assert min_variance_rates("2.83", 3) == ["1", "0.83", "0"]
    assert min_variance_rates("4", 3) == ["1", "1", "1"]
    assert parse_rates("1, 0.83,0") == [1.0, 0.83, 0.0]
    with pytest.raises(ValueError, match="rate 'x' is not a number"):
        parse_rates("1,x")
    assert rates_problem([1, 0.83], 3) == ("rates must contain K=3 values (the effective "
                                           "--spec-draft-n-max), got 2")
    assert rates_problem([1, 1.2, 0], 3) == "rate 1 is 1.2: rates must be finite and within [0, 1]"
    assert rates_problem([0.5, 0.6, 0], 3).startswith("rate 1 (0.6) exceeds rate 0 (0.5)")


# ---- emit --------------------------------------------------------------------

@pytest.mark.parametrize("fmt, text", [
    ("args", "--spec-synth-len 2.83"),
    ("shell", "export LLAMA_ARG_SPEC_SYNTH_LEN=2.83"),
    ("env", "LLAMA_ARG_SPEC_SYNTH_LEN=2.83"),
    ("yaml", 'LLAMA_ARG_SPEC_SYNTH_LEN: "2.83"'),
    ("json", '{"LLAMA_ARG_SPEC_SYNTH_LEN": "2.83"}'),
])
def test_emit_length_says_which_schedule_it_realises(run_cli, fmt, text):
    code, out, err = run_cli("emit", *CELL, "--engine", "llamacpp", "--format", fmt, "--length")
    assert (code, out) == (0, text + "\n")
    assert err == ("note: llama.cpp realises --spec-synth-len 2.83 at K=3 as a geometric "
                   "schedule (survival [0.772, 0.597, 0.461]), not the minimum-variance one "
                   "vLLM, SGLang, TensorRT-LLM and ATOM realise ([1,0.83,0]); for that "
                   "distribution use the rates form (emit's default: "
                   "--spec-synth-rates 1,0.83,0)\n")


@pytest.mark.parametrize("fmt, text", [
    ("args", "--spec-synth-rates 1,0.83,0"),
    ("shell", "export LLAMA_ARG_SPEC_SYNTH_RATES=1,0.83,0"),
    ("env", "LLAMA_ARG_SPEC_SYNTH_RATES=1,0.83,0"),
    ("yaml", 'LLAMA_ARG_SPEC_SYNTH_RATES: "1,0.83,0"'),
    ("json", '{"LLAMA_ARG_SPEC_SYNTH_RATES": "1,0.83,0"}'),
])
def test_emit_default_is_the_min_variance_rates(run_cli, fmt, text):
    """The default is the schedule every other engine's length knob realises, which
    `verify` confirms without flags; the same as --distribution min-variance."""
    code, out, err = run_cli("emit", *CELL, "--engine", "llamacpp", "--format", fmt)
    assert (code, out, err) == (0, text + "\n", "")
    assert run_cli("emit", *CELL, "--engine", "llamacpp", "--format", fmt, "--distribution",
                   "min-variance") == (code, out, err)


def test_emit_rates_forms(run_cli):
    code, out, err = run_cli("emit", *CELL, "--engine", "llamacpp", "--distribution")
    assert (code, out, err) == (0, "export LLAMA_ARG_SPEC_SYNTH_RATES=0.7,0.65,0.48\n", "")
    from goldenal.apply.emit import emit

    frag = emit("goldenal-tiny", engine="llamacpp", k=3, thinking="on", golden_dir=str(GOLDEN),
                format="args", distribution=True)
    assert (frag.knob, frag.value, frag.rates, frag.notes) == (
        "--spec-synth-rates", "0.7,0.65,0.48", (0.7, 0.65, 0.48), ())
    frag = emit("goldenal-tiny", engine="llamacpp", k=3, thinking="on", golden_dir=str(GOLDEN),
                format="args")
    assert (frag.knob, frag.value, frag.rates, frag.notes) == (
        "--spec-synth-rates", "1,0.83,0", (1.0, 0.83, 0.0), ())
    code, out, err = run_cli("emit", *CELL, "--engine", "atom", "--distribution")
    assert code == 2 and err.startswith("error: `distribution` is for vLLM")
    code, out, err = run_cli("emit", *CELL, "--engine", "llamacpp", "--length",
                             "--distribution")
    assert (code, out, err) == (2, "", "error: `distribution` writes llama.cpp's rates form, "
                                       "not --spec-synth-len\n")
    code, out, err = run_cli("emit", *CELL, "--engine", "vllm", "--length")
    assert (code, err) == (2, "error: `form` is for ATOM (rate: --spec-decode-acceptance-rate) "
                              "and llama.cpp (length: --spec-synth-len)\n")


# ---- inject on launch scripts ----------------------------------------------------

SCRIPT = """#!/usr/bin/env bash
MODELS=${MODELS:-/models}
exec llama-server --model "$MODELS/target.gguf" --port 8080 \\
    --spec-type draft-simple --spec-draft-model "$MODELS/draft.gguf" \\
    --spec-draft-n-max 3 --ctx-size 1024
"""


def _script(tmp_path, text=SCRIPT, name="serve.sh"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_inject_adds_the_knob_after_the_draft_length(tmp_path, run_cli):
    path = _script(tmp_path)
    code, out, err = run_cli("inject", path, "--thinking", "on", "--golden-dir", GOLDEN)
    assert code == 0 and out == ""
    assert err.splitlines() == [
        f"{path}:3: note: llama.cpp realises --spec-synth-len 2.83 at K=3 as a geometric "
        "schedule (survival [0.772, 0.597, 0.461]), not the minimum-variance one vLLM, SGLang, "
        "TensorRT-LLM and ATOM realise ([1,0.83,0]); for that distribution use the rates form "
        "(emit's default: --spec-synth-rates 1,0.83,0)",
        f"{path}: changed 1 of 1 entry (llamacpp K=3: 2.83)"]
    assert path.read_text() == SCRIPT.replace("--spec-draft-n-max 3 ",
                                              "--spec-draft-n-max 3 --spec-synth-len 2.83 ")
    code, _, err = run_cli("inject", path, "--thinking", "on", "--golden-dir", GOLDEN, "--check")
    assert code == 0 and err.endswith("already carries the golden AL in 1 entry; nothing to "
                                      "change\n")


def test_audit_reads_an_injected_script_whose_path_says_nothing(tmp_path, run_cli):
    # a launch script that sets the llama.cpp knob is a serve config to check, wherever it
    # lives: it used to be skipped as "names a synthetic knob but never sets one"
    path = _script(tmp_path)
    assert run_cli("inject", path, "--thinking", "on", "--golden-dir", GOLDEN)[0] == 0
    code, out, _ = run_cli("audit", tmp_path, "--golden-dir", GOLDEN, "--no-cache",
                           "--show-skipped")
    assert "skipped" not in out.replace("skipped 0 files", "")
    assert "Checked 1 serve config in 1 file read; skipped 0 files." in out
    path.write_text(SCRIPT.replace("--spec-draft-n-max 3 ",
                                   "--spec-draft-n-max 3 --spec-synth-len 4.5 "))
    code, out, _ = run_cli("audit", tmp_path, "--golden-dir", GOLDEN, "--no-cache")
    assert code == 1 and "serve.sh:5:26: GAL204 --spec-synth-len 4.5 is outside [1, 4] for " \
                         "K=3; llama-server refuses to start" in out


@pytest.mark.parametrize("length, rates_line", [
    ("export LLAMA_ARG_SPEC_SYNTH_LEN=2.83\n", 6),
    ("", 5)])
def test_audit_length_beside_rates_is_refused_as_llama_server_does(tmp_path, run_cli, length,
                                                                   rates_line):
    # common/speculative.cpp: "synthetic acceptance length and rates are mutually exclusive"
    flags = "--spec-synth-rates 1,0.83,0 " + ("" if length else "--spec-synth-len 2.83 ")
    _script(tmp_path, length + SCRIPT.replace("--spec-draft-n-max 3 ",
                                              "--spec-draft-n-max 3 " + flags))
    code, out, _ = run_cli("audit", tmp_path, "--golden-dir", GOLDEN, "--no-cache")
    first = "LLAMA_ARG_SPEC_SYNTH_LEN" if length else "--spec-synth-len"
    assert code == 1 and f"GAL207 {first} and --spec-synth-rates are both set: llama-server " \
                         "refuses to start (synthetic acceptance length and rates are mutually " \
                         "exclusive); keep one" in out
    assert f"serve.sh:{rates_line}:" in out


def test_inject_switches_forms_and_keeps_chosen_rates(tmp_path, run_cli):
    path = _script(tmp_path)
    assert run_cli("inject", path, "--thinking", "on", "--golden-dir", GOLDEN)[0] == 0
    code, _, err = run_cli("inject", path, "--thinking", "on", "--golden-dir", GOLDEN,
                           "--distribution", "min-variance")
    assert code == 0 and "--spec-synth-rates 1,0.83,0 --ctx-size" in path.read_text()
    assert "--spec-synth-len" not in path.read_text()
    # rates realising the golden AL stay when no form is asked for
    code, _, err = run_cli("inject", path, "--thinking", "on", "--golden-dir", GOLDEN)
    assert code == 0 and "nothing to change" in err


def test_inject_updates_an_exported_knob_and_refuses_a_pinned_other_value(tmp_path, run_cli):
    path = _script(tmp_path, "export LLAMA_ARG_SPEC_SYNTH_LEN=2.5\n" + SCRIPT)
    code, _, err = run_cli("inject", path, "--thinking", "on", "--golden-dir", GOLDEN)
    assert code == 3 and err.endswith("LLAMA_ARG_SPEC_SYNTH_LEN is already pinned to 2.5, "
                                      "golden value is 2.83; use --force to overwrite\n")
    code, _, _ = run_cli("inject", path, "--thinking", "on", "--golden-dir", GOLDEN, "--force")
    assert code == 0 and path.read_text().startswith("export LLAMA_ARG_SPEC_SYNTH_LEN=2.83\n")
    assert "--spec-synth-len" not in path.read_text()


def test_inject_refusals(tmp_path, run_cli):
    plain = _script(tmp_path, "llama-server -m /m/target.gguf --spec-synth-len 2.83\n", "a.sh")
    code, _, err = run_cli("inject", plain, "--thinking", "on", "--golden-dir", GOLDEN)
    assert code == 1 and err == (f"error: {plain}:1: --spec-synth-len on a llama-server without "
                                 "speculative decoding (--spec-type / --spec-draft-model): the "
                                 "server refuses to start\n")
    default_k = _script(tmp_path, "llama-server -m /m/target.gguf -md /m/draft.gguf\n", "b.sh")
    code, _, err = run_cli("inject", default_k, "--thinking", "on", "--golden-dir", GOLDEN,
                           "--k", "4")
    assert code == 1 and err == (f"error: {default_k}:1: --k 4 contradicts the file: no "
                                 "--spec-draft-n-max, so llama.cpp drafts its default K=3\n")
    code, _, err = run_cli("inject", default_k, "--thinking", "on", "--golden-dir", GOLDEN)
    assert code == 0 and f"{default_k}:1: warning: no --spec-draft-n-max: the value is for " \
                         "llama.cpp's default K=3" in err
    assert default_k.read_text() == ("llama-server -m /m/target.gguf -md /m/draft.gguf "
                                     "--spec-synth-len 2.83\n")
    guarded = _script(tmp_path, 'if [ "$EVAL_ONLY" = "true" ]; then\n  echo eval\nfi\n'
                      + SCRIPT, "c.sh")
    code, _, err = run_cli("inject", guarded, "--thinking", "on", "--golden-dir", GOLDEN)
    assert code == 1 and "runs on both the EVAL_ONLY=true path and the benchmark path" in err


def test_settings_read_back(tmp_path):
    path = _script(tmp_path, "export LLAMA_ARG_SPEC_SYNTH_RATES=1,0.83,0\n" + SCRIPT)
    (s,) = read_command_settings(path)
    assert (s.engine, s.knob, s.value, s.k, s.method, s.draft, s.model) == (
        "llamacpp", "--spec-synth-rates", "1,0.83,0", 3, "draft-simple", "draft.gguf",
        "target.gguf")
    assert s.extra["env"] == "LLAMA_ARG_SPEC_SYNTH_RATES" and s.line == 1
    from goldenal.engines import read_settings

    assert [x.engine for x in read_settings(path)] == ["llamacpp"]


# ---- the server log and /metrics ----------------------------------------------------

def test_task_lines_with_trace_per_position():
    obs = ingest(LOGS / "server_rates_trace.log")
    assert obs.complete
    rows = [(o.format, o.line, o.k, o.drafts, o.draft_tokens, o.accepted, o.accepted_per_position,
             o.request) for o in obs]
    # "draft acceptance = 0.61290 (38 accepted / 62 generated), mean len = 2.81" with
    # "acc per pos = (1.000, 0.810, 0.000)": 21 steps; the second task 20 steps
    assert rows == [("llamacpp-task", 311, 3, 21, 62, 38, (21, 17, 0), "1"),
                    ("llamacpp-task", 340, 3, 20, 59, 39, (20, 19, 0), "24")]
    (src,) = obs.sources
    assert src.facts["server_start"] == [ServerStart(
        266, 3, "--spec-draft-n-max", synthetic=True, knob=2.83, pinned=2.83,
        stated="llama-server resolved its synthetic acceptance to mean length 2.83 "
               "(rates [1.0, 0.83, 0.0])")]


def test_task_lines_at_default_verbosity_and_cumulative_statistics():
    length = ingest(LOGS / "server_length.log")
    assert [(o.k, o.drafts, o.accepted, o.accepted_per_position, o.extra["drafts_from"])
            for o in length] == [(3, 21, 37, None, "mean"), (3, 19, 40, None, "mean")]
    real = ingest(LOGS / "server_real_trace.log")
    assert [(o.drafts, o.accepted, o.accepted_per_position) for o in real] == [
        (33, 25, (15, 7, 3)), (34, 24, (15, 6, 3))]
    # without per-task lines the last cumulative line is the whole log (counters never reset)
    (stat,) = ingest(LOGS / "server_statistics_only.log")
    assert (stat.format, stat.k, stat.drafts, stat.accepted, stat.accepted_per_position) == (
        "llamacpp-statistics", 3, 67, 49, (30, 13, 6))
    assert (stat.drafts, stat.accepted) == (sum(o.drafts for o in real),
                                            sum(o.accepted for o in real))


def test_metrics_window_from_a_fresh_server():
    # the scrape before the first request has no per-position series: they count from zero
    (o,) = ingest([LOGS / "rates_before.prom", LOGS / "rates_after.prom"])
    assert (o.engine, o.format, o.k, o.drafts, o.draft_tokens, o.accepted,
            o.accepted_per_position) == ("llamacpp", "llamacpp-prometheus", 3, 41, 121, 77,
                                         (41, 36, 0))
    log = ingest(LOGS / "server_rates_trace.log")
    assert (o.drafts, o.accepted) == (sum(x.drafts for x in log), sum(x.accepted for x in log))


def test_metrics_reset_is_refused(tmp_path):
    after = (LOGS / "rates_after.prom").read_text()
    (tmp_path / "m_before.prom").write_text(after.replace("num_drafts_total 41",
                                                          "num_drafts_total 50"))
    (tmp_path / "m_after.prom").write_text(after)
    obs = ingest([tmp_path / "m_before.prom", tmp_path / "m_after.prom"])
    assert not obs.complete and "went 50 -> 41" in str(obs.problems[0])


def test_verify_reads_the_log_and_names_the_schedule(run_cli):
    code, out, _ = run_cli("verify", LOGS / "server_length.log", "--target", "2.83", "--k", "3",
                           "--profile", "none")
    assert code == 0 and out.startswith("hit: realized AL 2.9")
    code, out, _ = run_cli("verify", LOGS / "server_rates_trace.log", "--target", "3.2",
                           "--k", "3")
    assert code == 1 and ("server_rates_trace.log:266: llama-server resolved its synthetic "
                          "acceptance to mean length 2.83 (rates [1.0, 0.83, 0.0]), not 3.2") in out


@pytest.mark.parametrize("framework", ["llamacpp", "llama.cpp", "llama-cpp"])
def test_runner_mode_maps_llamacpp(tmp_path, framework):
    from goldenal.apply.inject import inject_runner

    path = _script(tmp_path)
    env = {"SYNTHETIC_ACCEPTANCE": "true", "FRAMEWORK": framework,
           "THINKING_MODE": "thinking_on"}
    outcome = inject_runner(path, environ=env, golden_dir=str(GOLDEN))
    assert outcome.result.changed == 1 and outcome.result.values[0].engine == "llamacpp"
    assert path.read_text() == SCRIPT.replace("--spec-draft-n-max 3 ",
                                              "--spec-draft-n-max 3 --spec-synth-len 2.83 ")


def test_runner_mode_llamacpp_as_a_runner_runs_it(tmp_path):
    import os
    import subprocess
    import sys

    path = _script(tmp_path)
    env = {**os.environ, "SYNTHETIC_ACCEPTANCE": "true", "FRAMEWORK": "llamacpp",
           "THINKING_MODE": "thinking_on", "EVAL_ONLY": "false", "GOLDENAL_DIR": str(GOLDEN)}
    proc = subprocess.run([sys.executable, "-m", "goldenal", "inject", str(path), "--framework",
                           "llamacpp"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.endswith(f"{path}: changed 1 of 1 entry (llamacpp K=3: 2.83)\n")
    assert "--spec-draft-n-max 3 --spec-synth-len 2.83 " in path.read_text()


def test_master_config_framework_names_llamacpp():
    from goldenal.auditing.master import engine_of

    assert engine_of("llamacpp") == engine_of("dynamo-llamacpp") == "llamacpp"
