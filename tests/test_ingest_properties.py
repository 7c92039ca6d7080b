"""Round trips: counts rendered in each printed format come back as the same counts.

The renderings follow the format strings documented in docs/formats.md §1-§8 (vLLM
family D ``%.2f``/``%.3f``/``%.1f``, the offline example's ``%.2f``, ATOM's
percent dictionary); the readers must recover the exact step and accepted
counts, and per-position counts within the printed rounding.
"""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldenal.readers import ingest
from goldenal.readers._base import counts_from_rates, survival_from_histogram

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def windows(draw, max_k=8):
    k = draw(st.integers(1, max_k))
    drafts = draw(st.integers(1, 50000))
    per_pos, alive = [], drafts
    for _ in range(k):
        alive = draw(st.integers(0, alive))
        per_pos.append(alive)
    return k, drafts, per_pos


def family_d(k, drafts, per_pos, stamp="11-30 05:00:10"):
    accepted, drafted = sum(per_pos), drafts * k
    rates = ", ".join(f"{c / drafts:.3f}" for c in per_pos)
    return (f"(APIServer pid=9) INFO {stamp} [metrics.py:101] SpecDecoding metrics: Mean "
            f"acceptance length: {1 + accepted / drafts:.2f}, Accepted throughput: "
            f"{accepted / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} tokens/s, "
            f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance "
            f"rate: {rates}, Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%")


@SETTINGS
@given(st.lists(windows(), min_size=1, max_size=5))
def test_family_d_round_trip(tmp_path, cells):
    k = cells[0][0]
    cells = [(k, d, (p + [0] * k)[:k]) for _, d, p in cells]
    path = tmp_path / "d.log"
    path.write_text("".join(family_d(*c) + "\n" for c in cells))
    obs = ingest(path)
    assert obs.complete
    for o, (kk, drafts, per_pos) in zip(obs, cells):
        assert (o.k, o.drafts, o.accepted, o.draft_tokens) == (kk, drafts, sum(per_pos),
                                                               drafts * kk)
        assert sum(o.accepted_per_position) == o.accepted
        # every rebuilt count prints as the same three-decimal rate
        assert [f"{c / drafts:.3f}" for c in o.accepted_per_position] == \
            [f"{c / drafts:.3f}" for c in per_pos]
        assert list(o.accepted_per_position) == sorted(o.accepted_per_position, reverse=True)


@SETTINGS
@given(windows(max_k=10))
def test_offline_example_round_trip(tmp_path, window):
    k, drafts, per_pos = window
    accepted = sum(per_pos)
    text = ("-" * 50 + "\n" + f"total_num_output_tokens: {drafts + accepted}\n"
            f"num_drafts: {drafts}\nnum_draft_tokens: {drafts * k}\n"
            f"num_accepted_tokens: {accepted}\n"
            f"mean acceptance length: {1 + accepted / drafts:.2f}\n" + "-" * 50 + "\n"
            + "".join(f"acceptance at token {i}: {c / drafts:.2f}\n"
                      for i, c in enumerate(per_pos)))
    path = tmp_path / "offline.txt"
    path.write_text(text)
    (o,) = ingest(path)
    assert (o.k, o.drafts, o.accepted) == (k, drafts, accepted)
    assert [f"{c / drafts:.2f}" for c in o.accepted_per_position] == \
        [f"{c / drafts:.2f}" for c in per_pos]


@SETTINGS
@given(st.lists(st.integers(0, 5000), min_size=2, max_size=9).filter(lambda h: sum(h) > 0))
def test_atom_debug_stats_round_trip(tmp_path, hist):
    k = len(hist) - 1
    steps, accepted = sum(hist), sum(j * h for j, h in enumerate(hist))
    doc = {"enabled": True, "total_draft_tokens": steps * k, "total_accepted_tokens": accepted,
           "acceptance_rate": accepted / (steps * k),
           "average_tokens_per_forward": round(1 + accepted / steps, 4),
           "distribution": {str(j): h for j, h in enumerate(hist) if h}}
    path = tmp_path / "mtp_stats.json"
    path.write_text(json.dumps(doc))
    (o,) = ingest(path)
    assert (o.k, o.drafts, o.accepted) == (k, steps, accepted)
    assert o.accepted_per_position == survival_from_histogram(hist)


@settings(max_examples=300, deadline=None)
@given(windows(max_k=12), st.sampled_from([0.0005, 0.005, 0.00005]))
def test_counts_from_rates_inverts_printed_rates(window, half):
    k, drafts, per_pos = window
    decimals = {0.0005: 3, 0.005: 2, 0.00005: 4}[half]
    rates = [round(c / drafts, decimals) for c in per_pos]
    got = counts_from_rates(drafts, rates, sum(per_pos), half + 1e-9)
    assert got is not None
    assert sum(got) == sum(per_pos)
    assert all(abs(g / drafts - r) <= half + 1e-9 for g, r in zip(got, rates))
