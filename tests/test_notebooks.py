"""Every notebook runs headlessly, top to bottom, on the public API only.

Also checks the example measurement run the second notebook reads: small,
labelled as simulated, and exactly what ``benchmarks/make_example_run.py``
regenerates.
"""

import ast
import importlib.util
import re

import pytest

from conftest import ROOT

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = ROOT / "notebooks"
RUN = ROOT / "measurements" / "minimaxm3-eagle3-sim-2026-11"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def test_the_three_notebooks_exist():
    assert [p.name for p in PATHS] == ["01_tour_of_the_curves.ipynb",
                                       "02_from_run_to_curve.ipynb",
                                       "03_synthetic_vs_real_acceptance.ipynb"]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=120,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert errors == []
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
               if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert figures, "a notebook of curves without a single figure"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.id
        assert not cell.metadata, cell.id


def _goldenal_imports(path):
    nb = nbformat.read(path, as_version=4)
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("goldenal"):
                out += [(node.module, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                out += [(alias.name, None) for alias in node.names
                        if alias.name.startswith("goldenal")]
    return out


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_uses_public_api_only(path):
    imports = _goldenal_imports(path)
    assert imports
    for module, name in imports:
        parts = module.split(".") + ([name] if name else [])
        assert not any(p.startswith("_") for p in parts), f"{module}.{name} is private"


def test_readme_lists_every_notebook():
    text = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"\(([^)]+\.ipynb)\)", text)
    assert listed == [p.name for p in PATHS]


# ---------------------------------------------------------------- example run

def test_example_run_is_small_and_labelled():
    import yaml

    files = sorted(p for p in (ROOT / "measurements").rglob("*") if p.is_file())
    assert sum(p.stat().st_size for p in files) < 300_000
    doc = yaml.safe_load((RUN / "run.yaml").read_text(encoding="utf-8"))
    assert doc["simulated"] is True
    assert doc["truth"]["seed"] == 20261130
    assert doc["truth"]["thinking_on"]["conditional_rates"] == [0.78, 0.77, 0.74, 0.70, 0.66,
                                                                0.62]
    assert doc["truth"]["anomalies"][0]["k"] == 4
    listed = sorted(f for cell in doc["cells"] for f in cell["files"])
    assert sorted(listed + ["run.yaml"]) == sorted(p.name for p in RUN.iterdir())
    assert (RUN / "run.yaml").read_text(encoding="utf-8").startswith("# SIMULATED measurement run")


def test_example_run_regenerates_identically(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "make_example_run", ROOT / "benchmarks" / "make_example_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = module.make_example_run(tmp_path / "run")
    assert names == sorted(p.name for p in RUN.iterdir() if p.name != "run.yaml") + ["run.yaml"]
    for name in names:
        assert (tmp_path / "run" / name).read_bytes() == (RUN / name).read_bytes(), name


def test_example_run_reads_back_as_simulated():
    from goldenal.readers import load_run
    from goldenal.testing.simulate import true_acceptance_length

    run = load_run(RUN)
    assert run.identity["simulated"] is True and run.warnings == ()
    assert sorted(run.cells) == [(t, k) for t in ("off", "on") for k in range(1, 7)]
    # pooled AL of each per-request cell is within a few hundredths of its truth
    for k in range(1, 7):
        obs = run.cells[("on", k)]
        al = 1 + sum(o.accepted for o in obs) / sum(o.drafts for o in obs)
        truth = true_acceptance_length((0.78, 0.77, 0.74, 0.70, 0.66, 0.62), k)
        assert abs(al - truth) < 0.08, (k, al, truth)
