"""The simulator: seeded processes rendered as real-format artifacts."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from goldenal.testing.simulate import simulate_cell, simulate_run, true_acceptance_length

from conftest import SAMPLES


# Family D (docs/formats.md §1.5): Mean acceptance length, Accepted throughput, Drafted
# throughput, Accepted, Drafted, Per-position acceptance rate, Avg Draft acceptance rate.
FAMILY_D = re.compile(
    r"^\(APIServer pid=4242\) INFO \d\d-\d\d \d\d:\d\d:\d\d \[metrics\.py:101\] "
    r"SpecDecoding metrics: Mean acceptance length: \d+\.\d\d, "
    r"Accepted throughput: \d+\.\d\d tokens/s, Drafted throughput: \d+\.\d\d tokens/s, "
    r"Accepted: \d+ tokens, Drafted: \d+ tokens, "
    r"Per-position acceptance rate: (?:\d\.\d{3}, )*\d\.\d{3}, "
    r"Avg Draft acceptance rate: \d+\.\d%$")


def _keys(line):
    return re.findall(r"([A-Za-z][A-Za-z ]*?):", line.split("SpecDecoding metrics:", 1)[1])


@pytest.fixture(scope="module")
def cell():
    return simulate_cell([0.8, 0.65, 0.5], n_requests=40, steps_per_request=200, rng=7,
                         n_engines=2)


def test_seeded_and_reproducible():
    a = simulate_cell([0.8, 0.6], n_requests=10, steps_per_request=50, rng=1)
    b = simulate_cell([0.8, 0.6], n_requests=10, steps_per_request=50, rng=1)
    c = simulate_cell([0.8, 0.6], n_requests=10, steps_per_request=50, rng=2)
    assert np.array_equal(a.lengths, b.lengths) and a.log_text() == b.log_text()
    assert not np.array_equal(a.lengths, c.lengths)


def test_request_heterogeneity():
    sim = simulate_cell([0.8, 0.5], n_requests=4000, steps_per_request=1, rng=3,
                        heterogeneity=10)
    rates = sim.request_rates
    np.testing.assert_allclose(rates.mean(axis=0), [0.8, 0.5], atol=0.01)
    # Beta(kappa a, kappa (1 - a)) has variance a (1 - a) / (kappa + 1)
    np.testing.assert_allclose(rates.var(axis=0), [0.16 / 11, 0.25 / 11], rtol=0.1)
    same = simulate_cell([0.8, 0.5], n_requests=5, steps_per_request=10, rng=3,
                         heterogeneity=None)
    assert np.all(same.request_rates == [0.8, 0.5])


def test_log_lines_have_the_real_family_d_shape(cell):
    spec = [t for t, counts in cell.log_lines() if counts is not None]
    assert spec and all(FAMILY_D.match(line) for line in spec)
    real = [line for line in (SAMPLES / "vllm_log_lines.txt").read_text().splitlines()
            if "SpecDecoding metrics: Mean acceptance length" in line]
    assert real and _keys(spec[0]) == _keys(real[0])
    # every spec line is preceded by its engine throughput line, as in the real logs
    lines = cell.log_text().splitlines()
    assert "Engine 000: Avg prompt throughput: 0.0 tokens/s" in lines[0]


def test_log_line_values_are_the_window_counts(cell):
    for text, counts in cell.log_lines():
        if counts is None:
            continue
        n, a, t, c = counts
        assert f"Accepted: {a} tokens, Drafted: {t} tokens" in text
        assert f"Mean acceptance length: {1 + a / n:.2f}," in text
        assert f"Avg Draft acceptance rate: {100 * a / t:.1f}%" in text
        assert t == 3 * n and a == sum(c)


def test_totals_are_consistent(cell):
    n, a, c = cell.totals
    assert n == cell.n_steps == len(cell.lengths)
    assert a == cell.lengths.sum() == c.sum()
    assert cell.pooled_acceptance_length == 1 + a / n
    assert cell.true_al == true_acceptance_length([0.8, 0.65, 0.5])
    for granularity in ("request", "window", "total"):
        obs = cell.observations(granularity)
        assert sum(o.drafts for o in obs) == n and sum(o.accepted for o in obs) == a


def test_prometheus_scrapes_difference_to_the_counts(cell):
    from prometheus_client.parser import text_string_to_metric_families

    before, after = cell.prometheus_scrapes()
    assert after.splitlines()[:3] == [
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="simulated/model"} '
        + after.splitlines()[2].rsplit(" ", 1)[1]]
    assert "# TYPE vllm:spec_decode_num_drafts_created gauge" in after
    assert 'position="2"} ' in after and 'position="3"' not in after

    def totals(text):
        out = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name.endswith("_total"):
                    key = (s.name, s.labels.get("position"))
                    out[key] = out.get(key, 0) + s.value
        return out

    b, a = totals(before), totals(after)
    n, acc, c = cell.totals
    assert a[("vllm:spec_decode_num_drafts_total", None)] - \
        b[("vllm:spec_decode_num_drafts_total", None)] == n
    assert a[("vllm:spec_decode_num_accepted_tokens_total", None)] - \
        b[("vllm:spec_decode_num_accepted_tokens_total", None)] == acc
    for i in range(3):
        key = ("vllm:spec_decode_num_accepted_tokens_per_pos_total", str(i))
        assert a[key] - b[key] == c[i]


def test_request_records_follow_the_vllm_shape(cell):
    records = cell.request_records()
    assert len(records) == 40
    sd = records[0]["metrics"]["speculative_decoding"]
    assert set(sd) == {"mean_acceptance_length", "draft_acceptance_rate",
                       "acceptance_histogram", "num_spec_steps", "num_accepted_draft_tokens",
                       "num_draft_tokens", "num_spec_tokens"}
    assert len(sd["acceptance_histogram"]) == 4 and sd["num_spec_tokens"] == 3
    assert sum(sd["acceptance_histogram"]) == sd["num_spec_steps"]
    assert json.loads(cell.request_jsonl().splitlines()[0]) == records[0]


def test_artifacts_read_back_through_ingestion(cell, tmp_path):
    ingest = pytest.importorskip("goldenal.readers").ingest
    n, a, c = cell.totals
    (tmp_path / "server.log").write_text(cell.log_text())
    before, after = cell.prometheus_scrapes()
    (tmp_path / "m_before.prom").write_text(before)
    (tmp_path / "m_after.prom").write_text(after)
    (tmp_path / "requests.jsonl").write_text(cell.request_jsonl())
    for files in (["server.log"], ["m_before.prom", "m_after.prom"], ["requests.jsonl"]):
        obs = list(ingest([tmp_path / f for f in files]))
        assert sum(o.drafts for o in obs) == n
        assert sum(o.accepted for o in obs) == a
        per_pos = np.sum([o.accepted_per_position for o in obs], axis=0)
        if files == ["server.log"]:
            # the log prints S(i) with three decimals, so per-position counts are
            # recovered only to that rounding (at most D * 0.0005 per window)
            windows = len(obs)
            assert np.all(np.abs(per_pos - c) <= windows * max(o.drafts for o in obs) * 5e-4)
        else:
            assert np.array_equal(per_pos, c)


def test_write_a_run_directory(tmp_path):
    run = simulate_run({"on": [0.8, 0.7], "off": [0.9, 0.8]}, [1, 2], rng=4, n_requests=5,
                       steps_per_request=20, identity={"curve": "sim_curve"})
    manifest = run.write(tmp_path / "run", artifact="requests")
    doc = yaml.safe_load(Path(manifest).read_text())
    assert doc["simulated"] is True and doc["curve"] == "sim_curve"
    assert doc["truth"] == {"thinking_off": {"conditional_rates": [0.9, 0.8]},
                            "thinking_on": {"conditional_rates": [0.8, 0.7]}}
    assert doc["cells"][0] == {"thinking": "off", "k": 1, "files": ["requests_off_k1.jsonl"]}
    with pytest.raises(FileExistsError):
        run.write(tmp_path / "run")


@pytest.mark.parametrize("rates,k,message", [
    ([], None, "non-empty vector"), ([0.5, 1.2], None, "values in"),
    ([0.5, 0.4], 3, "`k` must be between 1 and 2")])
def test_rate_validation(rates, k, message):
    with pytest.raises(ValueError, match=message):
        simulate_cell(rates, k=k, rng=0)
