"""goldenal: golden acceptance-length (AL) curves for speculative decoding.

The public API is imported lazily so that ``goldenal lookup`` (run inside
``$(...)`` in every recipe) pays only for what it uses.  Each function lives
in a module of another name (``goldenal.fit`` in ``goldenal.stats``,
``goldenal.ingest`` in ``goldenal.readers``, ``goldenal.measure`` in
``goldenal.measuring.measure``, ``goldenal.audit`` in
``goldenal.auditing``...), so importing a module can
never shadow the function of the same name.
"""

__version__ = "0.1.0"

# public name -> defining module
_EXPORTS = {
    # registry and policy
    "lookup": "goldenal.api",
    "load_registry": "goldenal.golden.registry",
    "Registry": "goldenal.golden.curves",
    "Curve": "goldenal.golden.curves",
    "GoldenValue": "goldenal.golden.policy",
    "validate": "goldenal.golden.validation",
    "import_curve": "goldenal.golden.importer",
    # engines
    "emit": "goldenal.apply.emit",
    "inject": "goldenal.apply.inject",
    "inject_files": "goldenal.apply.inject",
    "audit": "goldenal.auditing",
    "audit_report": "goldenal.auditing",
    "AuditReport": "goldenal.auditing",
    "Finding": "goldenal.auditing",
    # measurements
    "Observation": "goldenal.core.observation",
    "ingest": "goldenal.readers",
    "load_run": "goldenal.readers",
    "measure": "goldenal.measuring.measure",
    "MeasureResult": "goldenal.measuring.measure",
    "measure_sweep": "goldenal.measuring.sweep",
    "SweepResult": "goldenal.measuring.sweep",
    "measurement_summary": "goldenal.measuring.sweep",
    "verify": "goldenal.measuring.verify",
    "fit": "goldenal.stats",
    "fit_cell": "goldenal.stats",
    "fit_chain": "goldenal.stats",
    "fit_curve_means": "goldenal.stats",
    "plan_measurement": "goldenal.stats",
    "diff_curves": "goldenal.stats.diff",
    "export_profile": "goldenal.apply.export",
    "read_profile": "goldenal.apply.export",
    # errors
    "GoldenALError": "goldenal.core.errors",
    "ParseError": "goldenal.core.errors",
    "DuplicateKeyError": "goldenal.core.errors",
    "RegistryError": "goldenal.core.errors",
    "UsageError": "goldenal.core.errors",
    "UnknownCurve": "goldenal.core.errors",
    "PolicyError": "goldenal.core.errors",
    "ConflictError": "goldenal.core.errors",
    "ConvergenceError": "goldenal.core.errors",
    "ServerError": "goldenal.core.errors",
    "CounterReset": "goldenal.core.errors",
    "RoundedCounters": "goldenal.core.errors",
    "LowSampleWarning": "goldenal.core.errors",
}

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
