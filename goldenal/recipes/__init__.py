"""Reading recipe files as text with positions: shell, YAML spans, env blocks, JSON in strings,
and the one table of knob spellings (:mod:`goldenal.recipes.knobs`); shared by the engine
adapters and the audit, importing neither (docs/architecture.md)."""
