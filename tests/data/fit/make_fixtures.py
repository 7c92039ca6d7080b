"""Regenerate the fitting fixtures of this folder (seeded, deterministic).

    python tests/data/fit/make_fixtures.py

``inferencex_results/``: an InferenceX collector results directory as it is
(no run.yaml): ``server_on_mtp{K}.log`` for K = 1..3, vLLM V1 log lines
rendered by ``goldenal.simulate`` (chain drafting, conditional rates 0.8, 0.7,
0.6, request heterogeneity).  Identity comes from the command line.
"""

from pathlib import Path

from goldenal.simulate import simulate_cell

HERE = Path(__file__).resolve().parent
RATES = [0.8, 0.7, 0.6]


def main():
    out = HERE / "inferencex_results"
    out.mkdir(exist_ok=True)
    for k in (1, 2, 3):
        cell = simulate_cell(RATES, k=k, n_requests=32, steps_per_request=400, concurrency=4,
                             step_seconds=0.1, rng=100 + k, model_name="minimax-m3")
        (out / f"server_on_mtp{k}.log").write_text(cell.log_text(pid=2741))


if __name__ == "__main__":
    main()
