"""goldenal: golden acceptance-length (AL) curves for speculative decoding.

The public API is imported lazily so that ``goldenal lookup`` (run inside
``$(...)`` in every recipe) pays only for what it uses.  Each function lives
in a module of another name (``goldenal.fit`` in ``goldenal.fitting``,
``goldenal.ingest`` in ``goldenal.readers``, ``goldenal.measure`` in
``goldenal.measuring``, ``goldenal.audit`` in
``goldenal.lint``...), so importing a module can
never shadow the function of the same name.
"""

__version__ = "0.1.0"

# public name -> defining module
_EXPORTS = {
    # registry and policy
    "lookup": "goldenal.api",
    "load_registry": "goldenal.registry",
    "Registry": "goldenal.curves",
    "Curve": "goldenal.curves",
    "GoldenValue": "goldenal.policy",
    "validate": "goldenal.validation",
    "import_curve": "goldenal.importer",
    # engines
    "emit": "goldenal.fragments",
    "inject": "goldenal.rewrite",
    "inject_files": "goldenal.rewrite",
    "audit": "goldenal.lint",
    "audit_report": "goldenal.lint",
    "AuditReport": "goldenal.lint",
    "Finding": "goldenal.lint",
    # measurements
    "Observation": "goldenal.observation",
    "ingest": "goldenal.readers",
    "load_run": "goldenal.readers",
    "measure": "goldenal.measuring",
    "MeasureResult": "goldenal.measuring",
    "measure_sweep": "goldenal.sweep",
    "SweepResult": "goldenal.sweep",
    "measurement_summary": "goldenal.sweep",
    "verify": "goldenal.verification",
    "fit": "goldenal.fitting",
    "fit_cell": "goldenal.fitting",
    "fit_chain": "goldenal.fitting",
    "fit_curve_means": "goldenal.fitting",
    "plan_measurement": "goldenal.fitting",
    "diff_curves": "goldenal.diff",
    "export_profile": "goldenal.interop",
    "read_profile": "goldenal.interop",
    # errors
    "GoldenALError": "goldenal.errors",
    "ParseError": "goldenal.errors",
    "DuplicateKeyError": "goldenal.errors",
    "RegistryError": "goldenal.errors",
    "UsageError": "goldenal.errors",
    "UnknownCurve": "goldenal.errors",
    "PolicyError": "goldenal.errors",
    "ConflictError": "goldenal.errors",
    "ConvergenceError": "goldenal.errors",
    "ServerError": "goldenal.errors",
    "CounterReset": "goldenal.errors",
    "RoundedCounters": "goldenal.errors",
    "LowSampleWarning": "goldenal.errors",
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
