"""Read synthetic-acceptance knobs back from launcher shell scripts.

Launchers set the knobs with ``export`` lines (SGLang, TensorRT-LLM), build
vLLM's speculative-config JSON in a string (``"synthetic_acceptance_length":
2.49`` or ``%.2f`` filled from a variable), or pass ATOM or llama.cpp flags.  This reader
finds each knob, the K written nearby and simple ``NAME=value`` variables so
``$VAR`` values can be resolved; it is read-only (``inject`` rewrites the
command lines of ATOM, ``llama-server`` and ``vllm serve``).
"""

import os

from goldenal.engines.base import SpecSetting
from goldenal.recipes import knobs
from goldenal.recipes.shell import literal_variables, resolve, unquote
from goldenal.core.files import read_text

# the knobs read here, and the K each engine's launcher writes next to them
_READ = knobs.spellings(engine=("sglang", "trtllm", "vllm"), setting=(knobs.LENGTH, knobs.RATES))
_K = {"sglang": knobs.spelling("sglang", "--speculative-num-steps"),
      "trtllm": knobs.spelling("trtllm", "max_draft_len"),
      "vllm": knobs.spelling("vllm", "num_speculative_tokens")}


def read_shell_settings(path, text=None):
    """Every synthetic-acceptance knob written in a shell script.

    Returns
    -------
    list of SpecSetting
        ``value`` is the value as written (e.g. ``2.99``, ``$SPEC_DECODE_AL``,
        ``%.2f``); ``extra["resolved"]`` holds the literal it resolves to
        through the script's own assignments, when it does.
    """
    from goldenal.engines.atom import read_command_settings

    path = os.fspath(path)
    if text is None:
        text = read_text(path, universal=True)
    variables = literal_variables(text)
    out = []
    k_of = {}           # the K each engine's launcher sets, read once per engine
    for row, m in knobs.finditer(text, _READ):
        engine, at = row.engine, row.start(m)
        line_start = text.rfind("\n", 0, at) + 1
        raw = m.group("value").rstrip("\\").strip()
        if engine not in k_of:
            k_of[engine] = _k(text, _K[engine], variables)
        extra = {}
        resolved = resolve(raw, variables)
        if resolved is not None and resolved != unquote(raw):
            extra["resolved"] = resolved
        out.append(SpecSetting(
            path=path, line=text.count("\n", 0, at) + 1, col=at - line_start + 1,
            engine=engine, role=None, knob=row.name, value=unquote(raw), k=k_of[engine],
            extra=extra))
    out.extend(read_command_settings(path, text))
    from goldenal.engines.llamacpp import read_command_settings as llamacpp_settings

    out.extend(llamacpp_settings(path, text))
    out.sort(key=lambda s: (s.line, s.col))
    return out


def _k(text, row, variables):
    """K as the first uncommented ``row`` in ``text`` sets it (else ``NUM_SPEC_TOKENS``), or None."""
    k_match = next((km for _, km in knobs.finditer(text, (row,))), None)
    k_text = resolve(k_match.group("value").rstrip(",\\"), variables) if k_match else None
    if k_text is None:
        k_text = variables.get("NUM_SPEC_TOKENS")
    return int(k_text) if k_text and k_text.isdigit() else None
