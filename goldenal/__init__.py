"""goldenal: golden acceptance-length (AL) curves for speculative decoding.

The public API is imported lazily, so ``goldenal lookup`` (inside ``$(...)``
in every recipe) pays only for what it uses.  Each function lives in a module
of another name (``goldenal.fit`` in ``goldenal.stats``, ``goldenal.audit`` in
``goldenal.auditing``...): importing a module never shadows a function.
"""

__version__ = "0.1.0"

# defining module -> its public names
_MODULES = {
    "goldenal.api": ("lookup",),
    "goldenal.golden.registry": ("load_registry",),
    "goldenal.golden.curves": ("Registry", "Curve"),
    "goldenal.golden.policy": ("GoldenValue",),
    "goldenal.golden.validation": ("validate",),
    "goldenal.golden.importer": ("import_curve",),
    "goldenal.apply.emit": ("emit",),
    "goldenal.apply.inject": ("inject", "inject_files"),
    "goldenal.apply.export": ("export_profile", "read_profile"),
    "goldenal.auditing": ("audit", "audit_report", "AuditReport", "Finding"),
    "goldenal.core.observation": ("Observation",),
    "goldenal.readers": ("ingest", "load_run"),
    "goldenal.measuring.measure": ("measure", "MeasureResult"),
    "goldenal.measuring.sweep": ("measure_sweep", "SweepResult", "measurement_summary"),
    "goldenal.measuring.verify": ("verify",),
    "goldenal.stats": ("fit", "fit_cell", "fit_chain", "fit_curve_means", "plan_measurement"),
    "goldenal.stats.diff": ("diff_curves",),
    "goldenal.core.errors": (
        "GoldenALError", "ParseError", "DuplicateKeyError", "RegistryError", "UsageError",
        "UnknownCurve", "PolicyError", "ConflictError", "ConvergenceError", "ServerError",
        "CounterReset", "RoundedCounters", "LowSampleWarning"),
}
# public name -> defining module
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'goldenal' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
