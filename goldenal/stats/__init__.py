"""Fitting: from measurement runs to golden curves with uncertainty (docs/statistics.md).
The committed golden value is always the measured cell; model values are diagnostics."""

from goldenal.stats.cell import fit_cell
from goldenal.stats.chain import fit_chain
from goldenal.stats.curve import check_cells, fit, is_chain_method
from goldenal.stats.output import fit_runs, load_runs, write_fit
from goldenal.stats.monotone import fit_curve_means, isotonic_decreasing
from goldenal.stats.parametric import fit_parametric_counts, fit_parametric_means
from goldenal.stats.plan import CellPlan, MeasurementPlan, plan_measurement
from goldenal.stats.results import (CellFit, CellFlag, ChainFit, Check, ConfidenceInterval,
                                    CurveFit, MonotoneFit, ParametricFit, PerPosition, format_al)

__all__ = [
    "CellFit", "CellFlag", "CellPlan", "ChainFit", "Check", "ConfidenceInterval", "CurveFit",
    "MonotoneFit", "ParametricFit", "PerPosition", "check_cells", "fit", "fit_cell", "fit_chain",
    "fit_curve_means", "fit_parametric_counts", "fit_parametric_means", "format_al",
    "fit_runs", "is_chain_method", "isotonic_decreasing", "load_runs",
    "MeasurementPlan", "plan_measurement", "write_fit",
]
