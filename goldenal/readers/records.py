"""The engine records the readers and ``measure`` take every engine fact from."""


def records():
    """Every engine's record (``RECORD`` of ``goldenal/engines/<engine>.py``), by name."""
    from goldenal.engines.knobs import MODULES

    return {name: module.RECORD for name, module in MODULES.items()}


def record(engine):
    """One engine's record; KeyError for an unknown engine."""
    return records()[engine]
