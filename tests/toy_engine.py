"""A sixth engine made of a record and a minimal adapter (tests/test_engine_records.py)."""

import shlex

from goldenal.engines.base import EngineAdapter
from goldenal.engines.record import Engine

RECORD = Engine(
    name="toy", title="Toy", release="toy-serve 1.0",
    value_knob="TOY_FORCE_ACCEPTED", unit="accepted", env_knob="TOY_FORCE_ACCEPTED",
    spellings=(("TOY_FORCE_ACCEPTED", "length", "env"), ("--toy-draft-len", "k", "flag")),
    launches=(("toy-serve", r"\btoy-serve\b"),), launch_word="toy-serve",
    metrics={"accepted": "toy:accepted_tokens_total"},
)


class ToyAdapter(EngineAdapter):
    name = RECORD.name
    knob = RECORD.value_knob
    record = RECORD

    def fragment(self, al_text, *, k, fmt, **options):
        return f"export {self.knob}={shlex.quote(self.convert(al_text))}"


ADAPTER = ToyAdapter()
