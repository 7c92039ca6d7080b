"""`goldenal verify`: runs at the golden target hit, runs whose knob was ignored miss.

Fixtures in tests/data/ingest/verify/ were rendered by goldenal.testing.simulate
(vLLM V1 log lines and /metrics scrapes) from fixed seeds: a min-variance
synthetic run at 2.83 (conditional rates [1, 0.83, 0]), real acceptance
([0.8, 0.6, 0.5]: the knob ignored), an integer-only schedule ([1, 0, 0]: the
fraction dropped) and a geometric schedule whose mean is 2.83 ([0.7725]*3).
"""

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.cli import main
from goldenal.core.errors import ParseError
from goldenal.readers import Observations
from goldenal.core.observation import Observation
from goldenal.api import lookup
from goldenal.measuring.verify import Verification, schedule, verify

DATA = Path(__file__).parent / "data" / "ingest" / "verify"
GOLDEN = dict(model="minimax-m3", draft="Inferact/MiniMax-M3-EAGLE3", k=3, thinking="on")


def pair(name):
    return [DATA / f"{name}_before.prom", DATA / f"{name}_after.prom"]


def naive_totals(name):
    """Reference: sum the drafts/accepted samples of two scrapes with a plain regex."""
    out = []
    for path in pair(name):
        text = path.read_text()
        d = sum(float(v) for v in re.findall(r"^vllm:spec_decode_num_drafts_total\{.*\} (\S+)$",
                                             text, re.M))
        a = sum(float(v) for v in re.findall(
            r"^vllm:spec_decode_num_accepted_tokens_total\{.*\} (\S+)$", text, re.M))
        out.append((d, a))
    (d0, a0), (d1, a1) = out
    return int(d1 - d0), int(a1 - a0)


@pytest.fixture(scope="module")
def golden():
    value = lookup(GOLDEN["model"], k=3, thinking="on", draft=GOLDEN["draft"])
    assert value.text == "2.83"
    return value


def test_synthetic_run_at_target_hits(golden):
    result = verify(pair("synthetic_2.83"), golden)
    steps, accepted = naive_totals("synthetic_2.83")
    assert isinstance(result, Verification) and result.verdict == "hit" and result.hit
    assert (result.steps, result.k, result.engine) == (steps, 3, "vllm")
    assert result.realized_al == 1 + accepted / steps
    assert result.sigma == math.sqrt(0.1411 / steps)
    assert result.tolerance == 4 * result.sigma + 0.005
    assert result.sigma_distance == (result.realized_al - 2.83) / result.sigma
    assert result.profile_ok is True and result.expected_survival == (1.0, 0.83, 0.0)
    assert result.reason == (
        f"realized AL 2.8282 vs target 2.83 (tolerance +-0.0144 over {steps} steps, -0.8 "
        "sigma); per-position profile matches the min-variance schedule (largest deviation "
        "0.5 sigma, position 1): the signature of a pinned knob (real acceptance does not "
        "accept exactly all or exactly none of the drafts at a position)")


def test_synthetic_log_hits_too(golden):
    result = verify(DATA / "synthetic_2.83.log", golden)
    assert result.hit and result.windows > 10


def test_knob_ignored_real_acceptance_misses(golden):
    result = verify(pair("ignored_real"), golden)
    assert result.verdict == "missed" and result.sigma_distance < -100
    assert "decays smoothly like real acceptance: the synthetic-acceptance knob was " \
           "silently ignored" in result.reason
    assert "vLLM 0.19.x under Model Runner V1" in result.reason
    assert verify(DATA / "ignored_real.log", golden).verdict == "missed"


def test_fraction_dropped_signature(golden):
    result = verify(pair("integer_only"), golden)
    assert result.verdict == "missed" and result.realized_al == 2.0
    assert "the realized AL is the integer part 1+1: the fractional part was dropped" \
        in result.reason


def test_geometric_schedule_matches_mean_but_not_profile(golden):
    result = verify(pair("geometric_2.83"), golden)
    assert abs(result.realized_al - 2.83) < result.tolerance  # the mean alone would pass
    assert result.verdict == "missed" and result.profile_ok is False
    assert "is not the min-variance schedule [1, 0.830, 0]" in result.reason


def test_run_directory_and_thinking_from_target(golden):
    result = verify(DATA / "run_hit", golden)
    assert result.hit


def obs(drafts, accepted, k=3, per_position=None, fmt="vllm-prometheus", mean=None):
    return Observation("x", None, "vllm", fmt, k, drafts, 3 * drafts if drafts else None,
                       accepted, per_position, mean)


def test_hand_worked_tolerance_boundaries():
    # N = 10000, p = 0.83: sigma = sqrt(0.83 * 0.17 / 10000) = 0.0037563..., tolerance
    # = 4 sigma + 0.005 = 0.0200252...; 18300 accepted is exactly AL 2.83
    sigma = math.sqrt(0.1411 / 10000)
    assert f"{4 * sigma + 0.005:.7f}" == "0.0200253"
    assert verify(Observations((obs(10000, 18300),)), 2.83, k=3).tolerance == 4 * sigma + 0.005
    assert verify(Observations((obs(10000, 18300 + 200),)), 2.83, k=3).verdict == "hit"
    assert verify(Observations((obs(10000, 18300 - 200),)), 2.83, k=3).verdict == "hit"
    assert verify(Observations((obs(10000, 18300 + 201),)), 2.83, k=3).verdict == "missed"


def test_integer_target_has_no_spread():
    assert schedule(3, 3) == (1.0, 1.0, 0.0)
    hit = verify(Observations((obs(500, 1000),)), "3.00", k=3)
    assert hit.hit and hit.sigma == 0.0 and hit.sigma_distance == 0.0
    assert verify(Observations((obs(500, 998),)), "3.00", k=3).hit  # 2.996: rounding
    miss = verify(Observations((obs(500, 990),)), "3.00", k=3)
    assert miss.verdict == "missed" and miss.sigma_distance == -math.inf
    assert "off the exact schedule" in miss.reason


def test_sglang_mean_only_lines_count_40_draws_each():
    lines = tuple(Observation("s", i, "sglang", "sglang-log", None, None, None, None, None, 2.83)
                  for i in range(10))
    result = verify(Observations(lines), 2.83, k=3)
    assert (result.method, result.steps) == ("printed means", 400)
    assert result.tolerance == 4 * math.sqrt(0.1411 / 400) + 0.01
    assert result.hit


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"outside \[1, K\+1\]"):
        verify(pair("synthetic_2.83"), 4.5, k=3)
    with pytest.raises(ValueError, match="`z` must be positive"):
        verify(pair("synthetic_2.83"), 2.83, k=3, z=0)
    with pytest.raises(ParseError, match="no readable windows"):
        verify(Observations(()), 2.83, k=3)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 7), st.integers(0, 99), st.integers(200, 10**6))
def test_property_exact_expectation_always_hits(k, hundredths, steps):
    """A run whose accepted count is the schedule's expectation hits for any K, AL, N."""
    f = min(k - 1, hundredths % k)
    target = f"{1 + f + hundredths / 100:.2f}" if f + hundredths / 100 <= k else f"{k + 1}.00"
    d = float(target) - 1
    accepted = round(d * steps)
    per_pos = tuple(round(s * steps) for s in schedule(target, k))
    if sum(per_pos) != accepted:  # rounding of p*N: keep the identity A = sum a_i
        per_pos = per_pos[:-1] + (per_pos[-1] + accepted - sum(per_pos),) if k > 1 else (accepted,)
    result = verify(Observations((Observation("x", None, "vllm", "vllm-prometheus", k, steps,
                                              k * steps, accepted, per_pos, None),)), target, k=k)
    assert result.hit, result.reason


# ---- CLI -------------------------------------------------------------------

def test_cli_hit_with_registry_selection(capsys):
    rc = main(["verify", str(DATA / "run_hit"), "--model", "minimax-m3",
               "--draft", "Inferact/MiniMax-M3-EAGLE3", "--k", "3", "--thinking", "on"])
    out, err = capsys.readouterr()
    assert rc == 0 and err == ""
    assert re.fullmatch(r"hit: realized AL 2\.8\d{3} vs target 2\.83 \(tolerance \+-0\.0\d{3} "
                        r"over \d+ steps, [+-]\d\.\d sigma\); per-position profile matches the "
                        r"min-variance schedule \(largest deviation \d\.\d sigma, position \d\): "
                        r"the signature of a pinned knob \(real acceptance does not accept "
                        r"exactly all or exactly none of the drafts at a position\)\n", out)


def test_cli_missed_exit_1(capsys):
    rc = main(["verify", *map(str, pair("ignored_real")), "--model", "minimax-m3",
               "--draft", "Inferact/MiniMax-M3-EAGLE3", "--k", "3", "--thinking", "on"])
    out, _ = capsys.readouterr()
    assert rc == 1 and out.startswith("missed: realized AL 2.5")


def test_cli_target_and_json(capsys):
    rc = main(["verify", *map(str, pair("synthetic_2.83")), "--target", "2.83", "--k", "3",
               "--format", "json"])
    record = json.loads(capsys.readouterr().out)
    assert rc == 0 and record["verdict"] == "hit" and record["target_text"] == "2.83"
    assert record["expected_survival"] == [1.0, 0.83, 0.0]


def test_cli_unreadable_exit_2(capsys):
    rc = main(["verify", str(DATA / "nope.log"), "--target", "2.83", "--k", "3"])
    assert rc == 2
    assert capsys.readouterr().err == f"error: {DATA / 'nope.log'}: no such file\n"


def test_cli_no_golden_cell_exit_1(capsys):
    rc = main(["verify", str(DATA / "run_hit"), "--model", "minimax-m3",
               "--draft", "Inferact/MiniMax-M3-EAGLE3", "--k", "12", "--thinking", "on"])
    assert rc == 1
    assert capsys.readouterr().err.startswith("error: ")


def test_start_up_config_explains_a_miss(tmp_path, golden):
    log = (DATA / "ignored_real.log").read_text()
    start = ("(APIServer pid=4242) INFO 11-30 05:00:00 [utils.py:328] non-default args: "
             "{'model': 'MiniMaxAI/MiniMax-M3', 'speculative_config': {'method': 'eagle3', "
             "'model': 'Inferact/MiniMax-M3-EAGLE3', 'num_speculative_tokens': 3, "
             "'rejection_sample_method': 'synthetic', 'synthetic_acceptance_length': 2.78}}\n")
    path = tmp_path / "server.log"
    path.write_text(start + log)
    result = verify(path, golden)
    assert result.verdict == "missed"
    assert result.notes == (f"{path}:1: the server was started with "
                            "synthetic_acceptance_length=2.78, not 2.83",)
    assert result.reason.endswith(result.notes[0])
    path.write_text(start.replace(", 'rejection_sample_method': 'synthetic', "
                                  "'synthetic_acceptance_length': 2.78", "") + log)
    assert verify(path, golden).notes == (
        f"{path}:1: the server started without synthetic acceptance "
        "(no rejection_sample_method='synthetic')",)
    # the rates form: the AL they give is held against the target
    path.write_text(start.replace("'synthetic_acceptance_length': 2.78",
                                  "'synthetic_acceptance_rates': [1.0, 0.5, 0.3]") + log)
    assert verify(path, golden).notes == (
        f"{path}:1: the server's synthetic_acceptance_rates give AL 2.8000, not 2.83",)


def test_atom_documented_forced_run_and_slack():
    """ATOM's docs run forced AL 3.78 at K=7 and read back 3.7699 over 200000 steps.

    That is 11 standard errors low: requests ending inside a step accept fewer
    drafts than scheduled.  The strict check says so; ``slack`` allows for it.
    """
    data = Path(__file__).parent / "data" / "ingest" / "atom_mtp_stats_doc.json"
    strict = verify(data, 3.78, k=7)
    assert strict.verdict == "missed" and strict.engine == "atom"
    assert strict.steps == 200000 and strict.realized_al == 1 + 553980 / 200000
    assert round(strict.sigma_distance, 1) == -10.9
    relaxed = verify(data, 3.78, k=7, slack=0.015)
    assert relaxed.hit and relaxed.profile_ok is True


def test_real_sample_of_explicit_rates_is_not_the_length_schedule():
    """vLLM PR #40662 ran synthetic_acceptance_rates [0.9, 0.5, 0.2]: mean 2.6, other profile."""
    data = Path(__file__).parent / "data" / "ingest" / "vllm_v1_synthetic_rates_40662.log"
    result = verify(data, 2.6, k=3)
    assert result.verdict == "missed" and abs(result.realized_al - 2.6) < result.tolerance
    assert result.survival == (4325 / 4774, 2373 / 4774, 969 / 4774)
    assert "explicit rates (synthetic_acceptance_rates" in result.reason


# ---- what the per-position profile shows about real acceptance vs a pinned knob -------

def llamacpp_obs(steps, per_pos, engine="llamacpp"):
    return Observations((Observation("x", None, engine, "llamacpp-prometheus", 3, steps,
                                     3 * steps, sum(per_pos), tuple(per_pos), None),))


MEAN_ONLY = ("realized AL 2.8300 vs target 2.83 (tolerance +-{tol} over {steps} steps, +0.0 "
             "sigma); the mean matches, but the mean alone cannot tell a pinned knob from real "
             "acceptance near the target; the per-position profile tells them apart where it "
             "can: ")
OTHER = ("; another per-step distribution: explicit rates (synthetic_acceptance_rates, "
         "--spec-synth-rates), a geometric-decay knob (vLLM 0.19.x's rate knob, or ATOM "
         "before #1948), or real acceptance")


def test_real_acceptance_near_the_target_is_not_called_the_geometric_knob():
    # a server without the knob whose draft happens to give AL 2.83 with a profile that is
    # not a constant per-position rate: the verdict names both schedules it is not
    result = verify(llamacpp_obs(10000, [9000, 6000, 3300]), 2.83, k=3)
    assert result.verdict == "missed" and result.mean_hit is True
    assert result.reason == MEAN_ONLY.format(tol="0.0200", steps=10000) + (
        "per-position survival [0.900, 0.600, 0.330] is not the min-variance schedule "
        "[1, 0.830, 0] (largest deviation at position 2: 0.330 vs 0.000, 70.1 sigma); nor is "
        "it llama.cpp's geometric schedule [0.772, 0.597, 0.461] for a bare --spec-synth-len "
        "2.83 (position 0: 0.900 vs 0.772, 30.3 sigma)") + OTHER
    assert "it is llama.cpp's geometric schedule" not in result.reason


def test_a_geometric_profile_is_a_bare_length_or_real_acceptance_at_a_constant_rate():
    result = verify(llamacpp_obs(1000, [772, 597, 461]), 2.83, k=3)
    assert result.verdict == "missed"
    assert result.reason == MEAN_ONLY.format(tol="0.0525", steps=1000) + (
        "per-position survival [0.772, 0.597, 0.461] is not the min-variance schedule "
        "[1, 0.830, 0] (largest deviation at position 2: 0.461 vs 0.000, 29.2 sigma); it "
        "matches llama.cpp's geometric schedule [0.772, 0.597, 0.461] for --spec-synth-len "
        "2.83 (largest deviation 0.0 sigma, position 0), which a bare --spec-synth-len "
        "realises and real acceptance at a constant per-position rate gives as well; pin "
        "--spec-synth-rates 1,0.83,0 (goldenal emit --engine llamacpp --distribution "
        "min-variance) for the min-variance one")
    geometric = verify(llamacpp_obs(1000, [772, 597, 461]), 2.83, k=3, profile="geometric")
    assert geometric.hit and geometric.reason.endswith(
        "; per-position profile matches llama.cpp's geometric schedule (largest deviation 0.0 "
        "sigma, position 0); real acceptance at a constant per-position rate gives this "
        "profile as well, so it does not show that the knob took effect")


def test_other_engines_are_not_told_about_llamacpps_schedule():
    result = verify(llamacpp_obs(10000, [9000, 6000, 3300], engine="vllm"), 2.83, k=3)
    assert "llama.cpp" not in result.reason and result.reason.endswith(OTHER)


def test_cli_verify_real_acceptance_near_the_target(tmp_path):
    # a llama.cpp scrape pair of a server without the knob: counters only
    before, after = tmp_path / "before.prom", tmp_path / "after.prom"
    names = ("spec_decode_num_drafts_total", "spec_decode_num_draft_tokens_total",
             "spec_decode_num_accepted_tokens_total")
    before.write_text("".join(f"llamacpp:{n} 0\n" for n in names) + "".join(
        f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} 0\n'
        for i in range(3)))
    after.write_text("".join(f"llamacpp:{n} {v}\n" for n, v in zip(names, (10000, 30000,
                                                                             18300))) +
                     "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total'
                             f'{{position="{i}"}} {v}\n' for i, v in
                             enumerate((9000, 6000, 3300))))
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "goldenal", "verify", str(before), str(after),
                           "--target", "2.83", "--k", "3"], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("missed: " + MEAN_ONLY.format(tol="0.0200", steps=10000))
    assert "nor is it llama.cpp's geometric schedule" in done.stdout
