"""Reading recipe files as text with positions: shell scripts, YAML spans, env blocks, JSON in strings,
and the one table of how each engine's knobs are spelled in them (:mod:`goldenal.recipes.knobs`).

Shared by the engine adapters (``inject``) and the audit; imports neither.
See ``docs/architecture.md``.
"""
