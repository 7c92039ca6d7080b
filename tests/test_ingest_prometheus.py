"""Prometheus scrapes: multi-engine sums, before/after windows, resets, missing families.

The .prom fixtures were rendered by prometheus_client itself from labelled
Counters registered under vLLM's names (vllm/v1/spec_decode/metrics.py), so
they have the exposition's exact shape: ``_total`` samples, ``_created``
gauges, sorted labels, scientific notation from 1e6.
"""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.core.errors import RoundedCounters
from goldenal.readers import ingest
from goldenal.readers.prometheus import window

DATA = Path(__file__).parent / "data" / "ingest"


def test_single_scrape_sums_engines_since_start():
    (o,) = ingest(DATA / "prom_dp2_k3_after.prom")
    # engine 0: 11000 drafts, engine 1: 1e+06 (scientific notation)
    assert (o.drafts, o.draft_tokens, o.accepted) == (1011000, 3033000, 1850130)
    assert o.accepted_per_position == (1011000, 839130, 0)
    assert o.k == 3 and o.extra == {"window": "since-start", "engines": 2}


def test_before_after_pair_is_differenced_and_summed_over_engines():
    obs = ingest([DATA / "prom_dp2_k3_before.prom", DATA / "prom_dp2_k3_after.prom"])
    assert obs.complete and len(obs) == 1
    (o,) = obs
    assert (o.drafts, o.draft_tokens, o.accepted) == (20000, 60000, 36600)
    assert o.accepted_per_position == (20000, 16600, 0)
    assert o.acceptance_length == 2.83
    assert o.extra["window"] == "between scrapes"
    assert o.extra["before"].endswith("prom_dp2_k3_before.prom")


def test_pair_order_on_the_command_line_does_not_matter():
    a = ingest([DATA / "prom_dp2_k3_after.prom", DATA / "prom_dp2_k3_before.prom"])
    assert [o.drafts for o in a] == [20000]


def test_counter_reset_between_scrapes_is_refused():
    obs = ingest([DATA / "prom_reset_before.prom", DATA / "prom_reset_after.prom"])
    assert len(obs) == 0 and not obs.complete
    (p,) = obs.problems
    assert p.path.endswith("prom_reset_after.prom")
    assert p.message == ('counter reset between scrapes: vllm:spec_decode_num_drafts_total'
                         '{engine="1",model_name="Inferact/MiniMax-M3"} went 990000 -> 5000 '
                         '(a restart); this window cannot be measured')


def test_recreated_series_detected_by_created_time():
    obs = ingest([DATA / "prom_recreated_before.prom", DATA / "prom_recreated_after.prom"])
    assert len(obs) == 0
    assert "_created 1764482400.000 -> 1764486000.000" in obs.problems[0].message


def test_missing_per_position_family():
    obs = ingest(DATA / "prom_no_per_position.prom")
    (o,) = obs
    assert (o.drafts, o.accepted, o.accepted_per_position, o.k) == (4000, 7320, None, None)
    assert o.acceptance_length == 2.83
    assert obs.complete  # a remark, not a refusal
    assert "no per-position counters" in obs.problems[0].message


def test_missing_per_position_family_with_k_hint():
    (o,) = ingest(DATA / "prom_no_per_position.prom", k=3)
    assert o.k == 3


def test_v084_without_drafts_counter_needs_k():
    (o,) = ingest(DATA / "prom_v084_no_drafts.prom")
    assert o.mean_only and (o.accepted, o.draft_tokens) == (2745, 4500)
    (o,) = ingest(DATA / "prom_v084_no_drafts.prom", k=3)
    assert (o.drafts, o.extra["approximate"]) == (1500, True)
    assert o.acceptance_length == 1 + 2745 / 1500


def test_prometheus_ui_export_rows_are_read_but_incomplete_data_refused():
    obs = ingest(DATA / "prom_ui_24049.txt")
    assert len(obs) == 0
    assert "no vllm:spec_decode_num_accepted_tokens_total samples" in obs.problems[0].message


def test_ui_rows_sum_all_eight_engines():
    from goldenal.readers.prometheus import Scrape

    scrape = Scrape(DATA / "prom_ui_24049.txt")
    drafts = [v for (name, labels), v in scrape.values.items()
              if name == "vllm:spec_decode_num_drafts"]
    assert len(drafts) == 8 and sum(drafts) == 22 + 15 + 29 + 20 + 25 + 24 + 27 + 26


def _exposition(engines, suffix="_total"):
    lines = []
    for name, idx in (("num_drafts", 0), ("num_draft_tokens", 1), ("num_accepted_tokens", 2)):
        lines.append(f"# TYPE vllm:spec_decode_{name}{suffix} counter")
        for e, row in enumerate(engines):
            lines.append(f'vllm:spec_decode_{name}{suffix}{{engine="{e}",model_name="m"}} '
                         f'{float(row[idx])!r}')
    for e, row in enumerate(engines):
        for i, c in enumerate(row[3]):
            lines.append(f'vllm:spec_decode_num_accepted_tokens_per_pos{suffix}'
                         f'{{engine="{e}",model_name="m",position="{i}"}} {float(c)!r}')
    return "\n".join(lines) + "\n"


@st.composite
def engines(draw, k=3):
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        d = draw(st.integers(1, 10**7))
        per = []
        alive = d
        for _ in range(k):
            alive = draw(st.integers(0, alive))
            per.append(alive)
        rows.append((d, d * k, sum(per), per))
    return rows


@settings(max_examples=60, deadline=None)
@given(engines(), st.sampled_from(["_total", ""]))
def test_property_sum_over_engines_exact(tmp_path_factory, rows, suffix):
    path = tmp_path_factory.mktemp("prom") / "m.prom"
    path.write_text(_exposition(rows, suffix))
    (o,) = ingest(path)
    assert o.drafts == sum(r[0] for r in rows)
    assert o.accepted == sum(r[2] for r in rows)
    assert o.accepted_per_position == tuple(sum(r[3][i] for r in rows) for i in range(3))


def test_llamacpp_totals_printed_rounded_are_refused(tmp_path):
    # llama-server prints its totals as C++ doubles, six significant digits
    # (tools/server/server-task.cpp to_metrics); the per-position family is exact
    def scrape(name, drafts, tokens, accepted, pos):
        path = tmp_path / name
        path.write_text(
            f"llamacpp:spec_decode_num_draft_tokens_total {tokens}\n"
            f"llamacpp:spec_decode_num_accepted_tokens_total {accepted}\n"
            f"llamacpp:spec_decode_num_drafts_total {drafts}\n"
            + "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}}'
                      f" {v}\n" for i, v in enumerate(pos)))
        return path

    before = scrape("before.prom", 999990, "1.99998e+06", 654321, [400000, 254321])
    after = scrape("after.prom", "1.00002e+06", "2.00006e+06", 654350, [400020, 254330])
    obs = ingest([before, after])
    assert len(obs) == 0 and not obs.complete
    (problem,) = [p for p in obs.problems if p.refused]
    assert problem.message == (
        "llamacpp:spec_decode_num_draft_tokens_total is 2.00006e+06: llama-server prints its "
        "counters with 6 significant digits, so from 1,000,000 on their differences are "
        "rounded; restart the server (its counters start at zero) to measure from exact counts")
    # a client scraping as it goes is stopped with the same words, not a second check's
    with pytest.raises(RoundedCounters) as err:
        window(before, after, k=2)
    assert (err.value.path, err.value.message) == (str(after), problem.message)
    with pytest.raises(RoundedCounters) as err:      # the earlier scrape alone is enough
        window(after, scrape("later.prom", "1.00002e+06", "2.00006e+06", 654360,
                             [400025, 254335]), k=2)
    assert err.value.message == problem.message
    with pytest.raises(RoundedCounters) as err:      # one scrape: the counters since start
        window(None, before, k=2)
    assert err.value.message.startswith("llamacpp:spec_decode_num_draft_tokens_total is "
                                        "1.99998e+06: llama-server prints")
    # below 1,000,000 every total is exact and read as before
    exact = ingest([scrape("exact_before.prom", 10, 20, 7, [5, 2]),
                    scrape("exact_after.prom", 30, 60, 27, [17, 10])])
    (o,) = exact
    assert (o.drafts, o.draft_tokens, o.accepted, o.accepted_per_position) == \
        (20, 40, 20, (12, 8))
