"""Read synthetic-acceptance knobs back from launcher shell scripts.

Launchers set the knobs with ``export`` lines (SGLang, TensorRT-LLM), build
vLLM's speculative-config JSON in a string (``"synthetic_acceptance_length":
2.49`` or ``%.2f`` filled from a variable), or pass ATOM or llama.cpp flags.  This reader
finds each knob, the K written nearby and simple ``NAME=value`` variables so
``$VAR`` values can be resolved; it is read-only (``inject`` rewrites ATOM
command lines only, where every value is literal).
"""

import os
import re

from goldenal.engines.base import SpecSetting
from goldenal.recipes.shell import literal_variables, resolve, unquote

_PATTERNS = [
    ("sglang", "SGLANG_SIMULATE_ACC_LEN",
     re.compile(r"SGLANG_SIMULATE_ACC_LEN[ \t]*[=:][ \t]*(?P<v>[^\s;]+)")),
    ("trtllm", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
     re.compile(r"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS[ \t]*[=:][ \t]*(?P<v>[^\s;]+)")),
    ("vllm", "synthetic_acceptance_length",
     re.compile(r"\\?\"synthetic_acceptance_length\\?\"[ \t]*:[ \t]*(?P<v>[^,}\s]+)")),
    ("vllm", "synthetic_acceptance_rates",
     re.compile(r"\\?\"synthetic_acceptance_rates\\?\"[ \t]*:[ \t]*(?P<v>\[[^\]]*\])")),
]
_K = {
    "sglang": re.compile(r"--speculative-num-steps[ \t=]+(?P<k>\S+)"),
    "trtllm": re.compile(r"max_draft_len[ \t]*:[ \t]*(?P<k>\S+)"),
    "vllm": re.compile(r"\\?\"num_speculative_tokens\\?\"[ \t]*:[ \t]*(?P<k>[^,}\s]+)"),
}


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
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    variables = literal_variables(text)
    out = []
    for engine, knob, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if text[line_start:m.start()].lstrip().startswith("#"):
                continue  # a comment naming the knob
            raw = m.group("v").rstrip("\\").strip()
            k_match = _K[engine].search(text)
            k = None
            if k_match:
                k_text = resolve(k_match.group("k").rstrip(",\\"), variables)
                if k_text is None and "NUM_SPEC_TOKENS" in variables:
                    k_text = variables["NUM_SPEC_TOKENS"]
                k = int(k_text) if k_text and k_text.isdigit() else None
            elif variables.get("NUM_SPEC_TOKENS", "").isdigit():
                k = int(variables["NUM_SPEC_TOKENS"])
            extra = {}
            resolved = resolve(raw, variables)
            if resolved is not None and resolved != unquote(raw):
                extra["resolved"] = resolved
            out.append(SpecSetting(
                path=path, line=text.count("\n", 0, m.start()) + 1,
                col=m.start() - line_start + 1, engine=engine, role=None, knob=knob,
                value=unquote(raw), k=k, extra=extra))
    out.extend(read_command_settings(path, text))
    from goldenal.engines.llamacpp import read_command_settings as llamacpp_settings

    out.extend(llamacpp_settings(path, text))
    out.sort(key=lambda s: (s.line, s.col))
    return out
