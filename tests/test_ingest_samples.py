"""Every real sample parses to counts that reproduce the figure it prints.

Fixtures under tests/data/ingest/ are verbatim excerpts of the public outputs
named in their first lines (see tests/data/ingest/SOURCES.md).  For each one
the counts read back must give exactly the printed AL (to the printed number
of decimals), or the documented formula's value where the source prints none.
"""

from pathlib import Path

import pytest

from goldenal.readers import ingest, sniff

DATA = Path(__file__).parent / "data" / "ingest"


def one_source(name, **kw):
    obs = ingest(DATA / name, **kw)
    assert obs.complete, [str(p) for p in obs.problems]
    return list(obs)


def al2(o):
    """AL from the counts, formatted as vLLM prints it (%.2f)."""
    return f"{1 + o.accepted / o.drafts:.2f}"


# ---- vLLM logs --------------------------------------------------------------

def test_family_d_club3090_reproduces_printed_means_and_rates():
    a, b = one_source("vllm_v1_club3090.log")
    assert (a.k, a.drafts, a.draft_tokens, a.accepted) == (5, 331, 1655, 632)
    assert a.accepted_per_position == (255, 173, 109, 60, 35)
    assert (b.drafts, b.accepted, b.accepted_per_position) == (337, 561, (256, 162, 83, 41, 19))
    assert (al2(a), al2(b)) == ("2.91", "2.66")
    assert (a.mean_al, b.mean_al) == (2.91, 2.66)
    # printed survival, three decimals, from the rebuilt counts
    assert [f"{c / a.drafts:.3f}" for c in a.accepted_per_position] == \
        ["0.770", "0.523", "0.329", "0.181", "0.106"]
    assert [f"{c / b.drafts:.3f}" for c in b.accepted_per_position] == \
        ["0.760", "0.481", "0.246", "0.122", "0.056"]
    assert sum(a.accepted_per_position) == a.accepted  # A = sum_i a_i
    assert a.timestamp == "05-04 01:06:43" and a.extra["process"] == "1"
    assert b.extra["dp_engine"] == "0"  # its "Engine 000:" line precedes it


def test_family_d_43295_k2():
    a, b = one_source("vllm_v1_43295.log")
    assert (a.k, a.drafts, a.accepted, a.accepted_per_position) == (2, 3607, 5533, (3001, 2532))
    assert (b.drafts, b.accepted, b.accepted_per_position) == (3627, 6418, (3370, 3048))
    assert (al2(a), al2(b)) == ("2.53", "2.77")
    assert f"{100 * a.accepted / a.draft_tokens:.1f}" == "76.7"


def test_family_d_synthetic_rates_40662():
    (o,) = one_source("vllm_v1_synthetic_rates_40662.log")
    assert (o.k, o.drafts, o.accepted) == (3, 4774, 7667)
    assert al2(o) == "2.61"
    assert [f"{c / o.drafts:.3f}" for c in o.accepted_per_position] == ["0.906", "0.497", "0.203"]


def test_family_c_rate_first_24127():
    (o,) = one_source("vllm_v1_rate_first_24127.log")
    assert o.format == "vllm-log-v1-rate-first"
    assert (o.k, o.drafts, o.draft_tokens, o.accepted) == (5, 59, 295, 262)
    assert o.accepted_per_position == (58, 56, 54, 52, 42)
    assert al2(o) == "5.44" and f"{100 * o.accepted / o.draft_tokens:.1f}" == "88.8"


def test_family_b_first_build_has_no_steps_without_k():
    (o,) = one_source("vllm_v1_first_15902.log")
    assert o.format == "vllm-log-v1-first"
    assert (o.accepted, o.draft_tokens, o.drafts, o.k) == (66, 66, None, None)
    assert o.mean_only


def test_family_b_with_k_uses_fixed_k_assumption():
    (o,) = one_source("vllm_v1_first_15902.log", k=3)
    assert (o.drafts, o.accepted, o.k) == (22, 66, 3)
    assert o.extra["approximate"] is True
    assert o.acceptance_length == 4.0


def test_nan_lines_with_zero_drafts_are_skipped():
    obs = ingest(DATA / "vllm_v1_nan_15958.log")
    assert len(obs) == 0 and not obs.complete
    assert "2 metrics line(s) with zero drafts skipped" in obs.problems[0].message
    assert obs.sources[0].facts["skipped_empty"] == 2


def test_v0_cumulative_lines_are_differenced_6768():
    a, b = one_source("vllm_v0_6768.log")
    # AL(V0) = emitted / (draft / K); window 2 = line 2 - line 1
    assert (a.k, a.draft_tokens, a.drafts, a.accepted) == (16, 42272, 2642, 0)
    assert (b.draft_tokens, b.drafts, b.accepted) == (51056 - 42272, 549, 0)
    assert (b.line, b.line_end) == (4, 9)  # window from one spec line to the next
    assert a.extra["window"] == "since-start" and "window" not in b.extra
    # the documented formula: System efficiency x (K+1) = 0.059 x 17
    assert a.mean_al == pytest.approx(0.059 * 17)
    assert f"{2642 / (2642 * 17):.3f}" == "0.059"


@pytest.mark.parametrize("name, k, steps, emitted, efficiency", [
    ("vllm_v0_8620.log", 3, 161, 161, "0.250"),
    ("vllm_v0_7301.log", 5, 1, 1, "0.167"),
])
def test_v0_efficiency_formula(name, k, steps, emitted, efficiency):
    first = one_source(name)[0]
    assert (first.k, first.drafts, first.accepted + first.drafts) == (k, steps, emitted)
    assert f"{emitted / (steps * (k + 1)):.3f}" == efficiency
    assert first.acceptance_length == 1.0


def test_v0_7301_second_window():
    _, b = one_source("vllm_v0_7301.log")
    assert (b.draft_tokens, b.drafts, b.accepted, b.line, b.line_end) == (10, 2, 0, 3, 4)


# ---- vLLM client outputs -----------------------------------------------------------

@pytest.mark.parametrize("name, k, drafts, tokens, accepted, printed, positions", [
    ("bench_console_k1_48892.txt", 1, 26407, 26407, 22021, "1.83", ["83.39"]),
    ("bench_console_k8_48892.txt", 8, 11043, 88344, 38611, "4.50",
     ["76.17", "61.58", "51.25", "42.43", "36.40", "30.94", "27.22", "23.65"]),
])
def test_bench_console(name, k, drafts, tokens, accepted, printed, positions):
    (o,) = one_source(name)
    assert sniff(DATA / name) == "vllm-bench-console"
    assert (o.k, o.drafts, o.draft_tokens, o.accepted) == (k, drafts, tokens, accepted)
    assert al2(o) == printed
    assert [f"{100 * c / drafts:.2f}" for c in o.accepted_per_position] == positions
    assert sum(o.accepted_per_position) == accepted


def test_bench_json_percent_scalar_fraction_list():
    (o,) = one_source("speedbench_on_mtp8.json")
    assert (o.k, o.drafts, o.draft_tokens, o.accepted) == (8, 11043, 88344, 38611)
    assert o.accepted_per_position == (8411, 6800, 5659, 4686, 4020, 3417, 3006, 2612)
    assert o.mean_al == 1 + 38611 / 11043


@pytest.mark.parametrize("name, k, drafts, accepted, printed, rows", [
    ("offline_26498.txt", 10, 4687, 12368, "3.64",
     ["0.74", "0.54", "0.41", "0.30", "0.22", "0.16", "0.12", "0.08", "0.05", "0.02"]),
    # six rows printed for K=3: the padding rows are dropped, K = draft tokens / drafts
    ("offline_ascend_7290.txt", 3, 675, 1722, "3.55", ["0.85", "0.85", "0.85"]),
])
def test_offline_example(name, k, drafts, accepted, printed, rows):
    (o,) = one_source(name)
    assert (o.k, o.drafts, o.accepted) == (k, drafts, accepted)
    assert al2(o) == printed
    assert [f"{c / drafts:.2f}" for c in o.accepted_per_position] == rows
    assert sum(o.accepted_per_position) == accepted


def test_per_request_metrics_histogram():
    (o,) = one_source("vllm_per_request_48915.txt")
    assert (o.k, o.drafts, o.draft_tokens, o.accepted) == (3, 43, 129, 10)
    # a_i = sum_{j>i} h_j with h = [39, 1, 0, 3]
    assert o.accepted_per_position == (4, 3, 3)
    assert 1 + o.accepted / o.drafts == o.mean_al == 1.2325581395348837
    assert o.request == "1"


# ---- SGLang -------------------------------------------------------------------

def test_sglang_decode_lines_are_mean_only_and_include_the_bonus():
    obs = one_source("sglang_decode_11948.log")
    assert [o.mean_al for o in obs] == [2.17, 1.95, 1.80, 2.05, 1.80]
    assert all(o.mean_only and o.acceptance_length == o.mean_al for o in obs)
    assert obs[0].timestamp == "2025-10-22 10:27:57" and obs[0].extra["rank"] == "TP0"


def test_sglang_meta_info_fragment_13754():
    (o,) = one_source("sglang_meta_13754.txt")
    assert (o.k, o.drafts, o.draft_tokens, o.accepted) == (5, 188, 940, 11)
    # the printed spec_accept_length is completion_tokens / spec_verify_ct (documented)
    assert o.mean_al == 200 / 188 == 1.0638297872340425
    assert o.acceptance_length == 1 + 11 / 188


def test_sglang_server_info_skips_null_ranks():
    obs = one_source("sglang_server_info.json")
    assert [(o.mean_al, o.extra["rank"]) for o in obs] == [(2.90, 2), (3.67, 3)]
    assert all(o.mean_only for o in obs)


def test_sglang_bench_summaries_take_k_from_heading():
    obs = ingest(DATA / "sglang_bench_4247.txt")
    assert [(o.k, o.mean_al) for o in obs] == [(8, 5.39), (5, 4.68), (8, 3.76)]
    assert any("2 different K" in p.message and not p.refused for p in obs.problems)


def test_sglang_bench_serving_result_block_gives_its_mean():
    obs = ingest(DATA / "sglang_bench_serving.txt", k=3)
    assert [(o.format, o.k, o.mean_al, o.mean_only) for o in obs] == [
        ("sglang-bench", 3, 2.83, True)]
    assert obs[0].extra == {"window": "bench run"}


def test_a_result_block_of_another_backend_is_not_sglangs():
    # the same rows against a vLLM server: no SGLang server said the mean
    from goldenal.readers import sglang

    text = (DATA / "sglang_bench_serving.txt").read_text().replace(
        "Backend:                                 sglang", "Backend:                                 vllm  ")

    assert not sglang.sniff_log(text)
    assert sglang.sniff_log((DATA / "sglang_bench_serving.txt").read_text())


def test_tokenspeed_line():
    (o,) = one_source("tokenspeed_1965.log")
    assert (o.format, o.mean_al) == ("tokenspeed-log", 1.90)


# ---- TensorRT-LLM ----------------------------------------------------------------

def test_trtllm_null_stats_only_is_not_a_measurement():
    obs = ingest(DATA / "trtllm_null_6364.json")
    assert len(obs) == 0 and not obs.complete
    assert any("specDecodingStats null" in p.message for p in obs.problems)


def test_trtllm_iterations_pool_counts():
    obs = one_source("trtllm_iterations.json")
    assert [(o.drafts, o.accepted, o.draft_tokens) for o in obs] == [(4, 7, 12), (4, 8, 12),
                                                                    (3, 5, 9)]
    assert [o.mean_al for o in obs] == pytest.approx([1 + 7 / 4, 1 + 8 / 4, 1 + 5 / 3], abs=1e-12)
    cell = ingest(DATA / "trtllm_iterations.json").summary()[0]
    assert cell.acceptance_length == 1 + 20 / 11


# ---- ATOM ----------------------------------------------------------------------

def test_atom_interval_lines_560():
    obs = one_source("atom_interval_560.log")
    assert [(o.k, o.drafts, o.accepted) for o in obs] == [(1, 1000, 727), (1, 1000, 703),
                                                          (1, 1000, 729)]
    assert [al2(o) for o in obs] == ["1.73", "1.70", "1.73"]
    assert [o.mean_al for o in obs] == [1.73, 1.70, 1.73]


def test_atom_cumulative_lines_differenced_when_alone():
    obs = one_source("atom_cumulative_only.log")
    assert [(o.drafts, o.accepted) for o in obs] == [(93000, 64982), (1000, 703), (1000, 729)]
    assert al2(obs[0]) == "1.70"  # cumulative line prints 1.70: 1 + 64982/93000


def test_atom_mtp_stats_doc_response():
    (o,) = one_source("atom_mtp_stats_doc.json")
    # zero buckets missing: K = total_draft_tokens / steps = 1400000 / 200000
    assert (o.k, o.drafts, o.accepted) == (7, 200000, 553980)
    assert o.accepted_per_position == (200000, 200000, 153980, 0, 0, 0, 0)
    assert f"{1 + o.accepted / o.drafts:.4f}" == "3.7699" == f"{o.mean_al:.4f}"


def test_atom_mtp_stats_pair_is_differenced():
    (o,) = one_source("atom_pair")
    assert (o.k, o.drafts, o.accepted) == (7, 180000, 553980 - 55000)
    assert o.accepted_per_position == (180000, 180000, 138980, 0, 0, 0, 0)


def test_atom_metrics_histogram():
    (o,) = one_source("atom_metrics.prom")
    assert (o.engine, o.k, o.drafts, o.accepted) == ("atom", 7, 200000, 553980)


def test_atom_doc_summary_line_is_mean_only():
    (o,) = one_source("atom_doc_summary.log")
    assert (o.k, o.mean_al, o.mean_only) == (3, 2.79, True)
    p = o.extra["distribution_percent"]
    assert f"{1 + sum(j * p[j] for j in p) / 100:.2f}" == "2.79"


# ---- llama.cpp -----------------------------------------------------------------

def test_llamacpp_request_line():
    (o,) = one_source("llamacpp_24536.log")
    assert (o.k, o.drafts, o.draft_tokens, o.accepted) == (3, 87, 259, 167)
    assert o.accepted_per_position == (70, 55, 42)
    assert al2(o) == "2.92"


# ---- sniffing ------------------------------------------------------------------

@pytest.mark.parametrize("name, reader", [
    ("vllm_v1_club3090.log", "vllm-log"), ("prom_dp2_k3_after.prom", "prometheus"),
    ("prom_ui_24049.txt", "prometheus"), ("speedbench_on_mtp8.json", "vllm-bench-json"),
    ("offline_26498.txt", "vllm-offline"), ("vllm_per_request_48915.txt", "vllm-request"),
    ("sglang_decode_11948.log", "sglang-log"), ("sglang_meta_13754.txt", "sglang-json"),
    ("trtllm_null_6364.json", "trtllm"), ("atom_interval_560.log", "atom-log"),
    ("atom_mtp_stats_doc.json", "atom-json"), ("llamacpp_24536.log", "llamacpp"),
    ("bad/club3090_log.bin", "vllm-log"),
])
def test_sniffer_reads_content_not_names(name, reader):
    assert sniff(DATA / name) == reader


# ---- shapes the samples imply but do not show whole ------------------------------

def _club_lines():
    return [line for line in (DATA / "vllm_v1_club3090.log").read_text().splitlines()
            if not line.startswith("#")]


def test_data_parallel_engines_interleaved(tmp_path):
    """Each engine prints its own 'Engine NNN:' line then its own spec line (DP > 1)."""
    spec1, _, engine, spec2 = _club_lines()
    lines = [engine, spec1, engine.replace("Engine 000", "Engine 001"), spec2,
             engine.replace("01:06:53", "01:07:03"), spec2.replace("01:06:53", "01:07:03"),
             engine.replace("Engine 000", "Engine 001").replace("01:06:53", "01:07:03"), spec1]
    path = tmp_path / "dp.log"
    path.write_text("\n".join(lines) + "\n")
    obs = ingest(path)
    assert [(o.extra["dp_engine"], o.drafts) for o in obs] == [("0", 331), ("1", 337),
                                                               ("0", 337), ("1", 331)]
    (cell,) = obs.summary()
    assert (cell.steps, cell.accepted, cell.windows) == (2 * 668, 2 * 1193, 4)


def test_bare_messages_and_other_prefixes(tmp_path):
    spec1 = _club_lines()[0]
    message = spec1[spec1.index("SpecDecoding"):]
    path = tmp_path / "mixed.log"
    path.write_text(message + "\n"
                    + "INFO 05-04 01:06:43 [metrics.py:86] " + message + "\n"
                    + "(EngineCore_DP0 pid=77) INFO 05-04 01:06:43 [metrics.py:120] "
                    + message + "\n")
    obs = ingest(path)
    assert [o.drafts for o in obs] == [331, 331, 331]
    assert [o.extra.get("process") for o in obs] == [None, None, "77"]


def test_vllm_v0_prometheus_uses_efficiency_gauge(tmp_path):
    path = tmp_path / "v0.prom"
    path.write_text(
        "# TYPE vllm:spec_decode_efficiency gauge\n"
        'vllm:spec_decode_efficiency{model_name="m"} 0.598\n'
        "# TYPE vllm:spec_decode_num_emitted_tokens_total counter\n"
        'vllm:spec_decode_num_emitted_tokens_total{model_name="m"} 1.0616e+04\n')
    obs = ingest(path)
    assert len(obs) == 0 and "V0 counters over-count" in obs.problems[0].message
    (o,) = ingest(path, k=3)
    assert o.format == "vllm-prometheus-v0" and o.mean_only
    assert o.mean_al == 0.598 * 4  # AL(V0) = efficiency x (K+1), docs/formats.md §1.2


def test_sglang_line_variants(tmp_path):
    path = tmp_path / "sg.log"
    path.write_text(
        # 2026 builds: comma after "Decode batch", forward-iteration tag; early 2025: no
        # accept rate; PD decode node with extra fields
        "[2026-03-02 11:00:01 DP1 TP0] Decode batch, [1200] #running-req: 12, #token: 9000, "
        "token usage: 0.10, accept len: 2.83, accept rate: 0.61, cuda graph: True, "
        "gen throughput (token/s): 1200.5, #queue-req: 0, \n"
        "[2025-04-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 99, token usage: "
        "0.00, accept len: 3.10, gen throughput (token/s): 150.00, #queue-req: 0, \n"
        "[2026-03-02 11:00:02 DP0 TP0] Decode batch. #running-req: 3, #full token: 10, "
        "full token usage: 0.01, pre-allocated usage: 0.00, #prealloc-req: 0, "
        "#transfer-req: 0, #retracted-req: 0, accept len: 1.95, cuda graph: True, "
        "gen throughput (token/s): 80.1, #queue-req: 0, \n"
        "[2026-03-02 11:00:03 TP0] Decode batch. #running-req: 1, #token: 99, token usage: "
        "0.00, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0, \n")
    obs = ingest(path)
    assert [(o.mean_al, o.extra.get("rank")) for o in obs] == [
        (2.83, "DP1 TP0"), (3.10, "TP0"), (1.95, "DP0 TP0")]


def test_observations_are_immutable_and_tabular():
    pd = pytest.importorskip("pandas")
    obs = ingest([DATA / "vllm_v1_43295.log", DATA / "atom_interval_560.log"])
    with pytest.raises(AttributeError):
        obs.items = ()
    assert repr(obs) == "<Observations: 5 windows from 2 source(s), complete>"
    frame = obs.to_frame()
    assert list(frame.columns[:6]) == ["source", "line", "line_end", "engine", "format", "k"]
    assert list(frame["drafts"]) == [3607, 3627, 1000, 1000, 1000]
    assert frame["drafts"].dtype == pd.Int64Dtype()
    summary = obs.summary().to_frame()
    assert list(summary["steps"]) == [7234, 3000]
    assert list(summary["al"]) == [round(1 + 11951 / 7234, 4), round(1 + 2159 / 3000, 4)]
