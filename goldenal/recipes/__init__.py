"""Reading recipe files as text with positions: shell scripts, YAML spans, env blocks, JSON in strings.

Shared by the engine adapters (``inject``) and the audit; imports neither.
See ``docs/architecture.md``.
"""
