"""goldenal: golden acceptance-length (AL) curves for speculative decoding.

The public API is imported lazily so that ``goldenal lookup`` (run inside
``$(...)`` in every recipe) pays only for what it uses.
"""

__version__ = "0.1.0"

# public name -> defining module
_EXPORTS = {
    "lookup": "goldenal.registry",
    "load_registry": "goldenal.registry",
    "Registry": "goldenal.registry",
    "Curve": "goldenal.registry",
    "GoldenValue": "goldenal.registry",
    "validate": "goldenal.validate",
    "import_curve": "goldenal.importer",
    "Observation": "goldenal.observation",
    "GoldenALError": "goldenal.errors",
    "ParseError": "goldenal.errors",
    "RegistryError": "goldenal.errors",
    "UsageError": "goldenal.errors",
    "UnknownCurve": "goldenal.errors",
    "PolicyError": "goldenal.errors",
    "ConflictError": "goldenal.errors",
    "ConvergenceError": "goldenal.errors",
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
