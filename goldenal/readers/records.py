"""The engine records the readers and ``measure`` take every engine fact from."""

from functools import lru_cache


@lru_cache(maxsize=None)
def records():
    """Every engine's record (``RECORD`` of ``goldenal/engines/<engine>.py``), by name.

    The single source of the engines' metric names, request fields and server facts.
    """
    import importlib

    import goldenal.engines

    return {name: importlib.import_module(f"goldenal.engines.{name}").RECORD
            for name in goldenal.engines.ENGINES}


def record(engine):
    """One engine's record; KeyError for an unknown engine."""
    return records()[engine]
