"""What a serve config says about its golden cell, and the signals it is read from.

Readers (:mod:`~goldenal.auditing.shell`, :mod:`~goldenal.auditing.recipe`,
:mod:`~goldenal.auditing.master`) produce :class:`Config` objects;
:mod:`goldenal.auditing.check` turns them into findings.  Also the text
signals they share: thinking mode, agentic or fixed-length, image versions.
"""

import bisect
import functools
import re
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from goldenal.engines.knobs import ENGINES, RUNNER_VARIABLE as RUNNER_LENGTH, record
from goldenal.engines import table as _knobs

# the runner's switch beside its length variable (``SYNTHETIC_ACCEPTANCE=true``)
RUNNER_SWITCH = RUNNER_LENGTH.rsplit("_", 1)[0]


_VALUE_SETTINGS = (_knobs.LENGTH, _knobs.RATES, _knobs.RATE)
# a knob given a value, as the one knob table spells it: NAME=, NAME:, "name":,
# \"name\": (JSON escaped inside a double-quoted bash string) or a flag and its value
VALUE_ROWS = _knobs.spellings(setting=_VALUE_SETTINGS)
# an environment spelling of a knob that is also a flag (llama.cpp's) reads as the flag
FLAG_OF_ENV = {env.name: flag.name for env in _knobs.SPELLINGS for flag in _knobs.SPELLINGS
               if env.form == _knobs.ENV and flag.form == _knobs.FLAG
               and env.setting in _VALUE_SETTINGS and (flag.engine, flag.setting)
               == (env.engine, env.setting)}
# the value knobs only the environment carries, in table order (the runner's last)
ENV_KNOBS = tuple(dict.fromkeys(r.name for r in _knobs.SPELLINGS if r.form == _knobs.ENV
                                and r.setting == _knobs.LENGTH and r.name not in FLAG_OF_ENV))

# Substrings that make a file worth reading at all (byte prefilter): the common stem of each
# engine's synthetic-acceptance settings in each form, and the runner's switch
def _stems():
    from os.path import commonprefix

    groups = {}
    for r in _knobs.SPELLINGS:
        if r.setting in _VALUE_SETTINGS + (_knobs.TOKEN_MODE, _knobs.ACC_METHOD):
            groups.setdefault((r.engine, r.form), []).append(r.name.lstrip("-"))
    stems = [commonprefix(names).rstrip("_-") for names in groups.values()]
    return tuple(dict.fromkeys(s.encode() for s in stems + [RUNNER_SWITCH]))


KNOB_BYTES = _stems()


def _spec_stems():
    """Substrings of every spelling that sets K, or a draft where that alone switches
    speculation on (an engine with a default K), and the stem of the speculative mappings'
    keys; a name holding another is left out, and so is one under 8 characters (a short flag):
    a prefilter matching most files would select nothing."""
    from os.path import commonprefix

    names = {r.name.lstrip("-") for r in _knobs.SPELLINGS if r.setting == _knobs.K or (
        r.setting == _knobs.DRAFT and record(r.engine).default_k is not None)}
    names.add(commonprefix([k for e in ENGINES for k in record(e).spec_config]).rstrip("-_"))
    names = {n for n in names if len(n) >= 8}
    return tuple(sorted(n.encode() for n in names if not any(o != n and o in n for o in names)))


SPEC_BYTES = _spec_stems()


@dataclass(frozen=True)
class Config:
    """One spec-decode configuration as served; ``line``/``col`` locate the knob, else
    the spec setting.  Facts the files do not give are None.
    """

    path: str
    line: int
    col: int = 1
    engine: "str | None" = None
    role: "str | None" = None
    model: tuple = ()                 # candidate model names, most specific first
    draft: "str | None" = None
    method: "str | None" = None
    variant: dict = field(default_factory=dict)
    k: "int | None" = None
    k_line: "int | None" = None
    thinking: "str | None" = None     # "on" / "off"
    thinking_source: "str | None" = None
    knob: "str | None" = None
    value: "str | None" = None
    # (name, separator) of the knob as the file writes it, when it differs from
    # ``knob=value``: a flag and a blank before its value, an environment twin of a flag
    spelling: "tuple | None" = None
    rejection_sample_method: "str | None" = None
    image: "str | None" = None
    agentic: "bool | None" = None
    eval_only: bool = False           # this branch is the EVAL_ONLY=true path
    eval_capable: bool = False        # the file runs evaluations somewhere
    branch: "str | None" = None       # human description of the branch taken
    spec: bool = True                 # speculative decoding is on
    drafts: bool = True               # this role verifies drafts (not a PD prefill)
    source_stated: bool = False       # a comment near the knob names the value's source
    extra: dict = field(default_factory=dict)

    @property
    def said(self):
        """The knob and its value as the file spells them (``knob=value`` when unknown)."""
        name, sep = self.spelling or (self.knob, "=")
        return f"{name}{sep}{self.value}"

    def with_(self, **changes):
        """A copy with ``changes``: :func:`dataclasses.replace` without re-running ``__init__``."""
        if not changes.keys() <= _CONFIG_FIELDS:
            return replace(self, **changes)     # refused as replace refuses it
        new = object.__new__(Config)
        new.__dict__.update(self.__dict__, **changes)
        return new


_CONFIG_FIELDS = frozenset(Config.__dataclass_fields__)


# ---------------------------------------------------------------- thinking mode

_KW_RE = re.compile(
    r"""["']?(enable_thinking|thinking|thinking_mode)["']?\s*[:=]\s*["']?"""
    r"""(true|false|True|False|enabled|disabled|on|off|1|0)\b""")
# SGLANG_ENABLE_THINKING, SGLANG_DEFAULT_THINKING, Dynamo's DYN_DEFAULT_THINKING_MODE, ...
_ENV_THINK_RE = re.compile(
    r"""\b((?:[A-Z0-9]+_)*(?:ENABLE|DEFAULT)_THINKING(?:_MODE)?)\b["']?\s*[:=]\s*["']?(\w+)""")
_DYN_RE = re.compile(r"""dyn-default-thinking-mode["']?\s*[:=]?\s*["']?(enabled|disabled)""")
# ``EXTRA_INPUTS[:=]...thinking:true`` within one quoted run, found in linear time
# (one regex with ``[^"'\n]*`` before ``thinking`` is quadratic on a line of
# repeated ``EXTRA_INPUTS=``): see _extra_inputs_thinking.
_EXTRA_START = re.compile(r"""EXTRA_INPUTS["']?\s*[:=]\s*["']?""")
_EXTRA_THINKING = re.compile(r"\bthinking:(true|false)")
_MODE_RE = re.compile(r"""\bTHINKING_MODE["']?\s*[:=]\s*["']?(thinking_on|thinking_off|on|off)\b""")
_TEMPLATE_RE = re.compile(r"""--chat[-_]template[ =]["']?(\S*think\S*)""", re.I)
_TRUE = {"true", "enabled", "on", "1", "yes", "thinking_on"}


def _extra_inputs_thinking(text):
    """``true``/``false`` as ``EXTRA_INPUTS["']?\\s*[:=]\\s*["']?[^"'\\n]*\\bthinking:(true|false)``
    would find it, in O(n log n): each quoted run's mentions are found once.
    """
    if "EXTRA_INPUTS" not in text or "thinking:" not in text:
        return None
    mentions = [(m.start(), m.group(1)) for m in _EXTRA_THINKING.finditer(text)]
    starts = [start for start, _ in mentions]
    stops = [i for i, ch in enumerate(text) if ch in "\"'\n"]
    for m in _EXTRA_START.finditer(text):
        at = bisect.bisect_left(stops, m.end())
        end = stops[at] if at < len(stops) else len(text)
        last = bisect.bisect_left(starts, end) - 1
        if last >= 0 and starts[last] >= m.end():
            return mentions[last][1]
    return None


def _signal(text):
    """``(on, description)`` of the first thinking-mode signal on one line, or None."""
    m = _DYN_RE.search(text)
    if m:
        return m.group(1) == "enabled", f"dyn-default-thinking-mode {m.group(1)}"
    value = _extra_inputs_thinking(text)
    if value:
        return value == "true", f"benchmark client extra input thinking:{value}"
    m = _ENV_THINK_RE.search(text)
    if m:
        return m.group(2).lower() in _TRUE, f"{m.group(1)}={m.group(2)}"
    m = _MODE_RE.search(text)
    if m:
        return m.group(1).endswith("on"), f"THINKING_MODE={m.group(1)}"
    low = text.lower()
    m = _KW_RE.search(text) if "template" in low and "kwargs" in low else None
    if m:
        return m.group(2).lower() in _TRUE, f"chat-template kwargs {m.group(1)}={m.group(2)}"
    m = _TEMPLATE_RE.search(text)
    return (True, f"thinking chat template {m.group(1)}") if m else None


def thinking_signals(lines, start=0, stop=None):
    """``(line_number, "on"|"off", description)`` for each thinking-mode signal in
    ``lines[start:stop]`` outside comments: chat-template kwargs, the engine's
    thinking switch, Dynamo's default mode, the client's ``EXTRA_INPUTS``,
    ``THINKING_MODE`` and a chat template whose file name says "thinking".
    """
    found = []
    stop = len(lines) if stop is None else stop
    for i in range(start, stop):
        text = lines[i]
        if "hink" not in text and "HINK" not in text:
            continue
        if text.lstrip().startswith("#"):
            continue
        said = _signal(text)
        if said:
            found.append((i + 1, "on" if said[0] else "off", said[1]))
    return found


def thinking_signals_in(text, lines):
    """:func:`thinking_signals` over only the lines of ``text`` that mention thinking."""
    return [signal for row in _knobs.lines_naming(lines, ("hink", "HINK"), text)
            for signal in thinking_signals(lines, row, row + 1)]


def decide_thinking(signals):
    """``(mode, description)`` from signals, client-side ones first; ``(None, None)``
    without any, ``(None, reason)`` when they disagree.
    """
    if not signals:
        return None, None
    client = [s for s in signals if "client" in s[2] or "THINKING_MODE" in s[2]]
    chosen = client or signals
    modes = {s[1] for s in chosen}
    if len(modes) > 1:
        where = ", ".join(f"line {s[0]}: {s[2]}" for s in chosen)
        return None, f"conflicting thinking-mode signals ({where})"
    s = chosen[-1]
    return s[1], f"{s[2]} (line {s[0]})"


# ------------------------------------------------------------- agentic or not

# every spelling of a fixed sequence length: 1k1k / 8k1k, ISL1K_OSL1K (TensorRT-LLM
# recipe directories), isl8192-osl1024, fixed-seq-len
_FIXED_RE = re.compile(r"(^|[/_-])(\d+k\d+k|isl\d+k?[_-]?osl\d+k?|fixed-seq-len|fixed_seq_len|stp)"
                       r"([/_.-]|$)")
# benchmark clients that run fixed input/output lengths (srt-slurm's ``sa-bench``)
FIXED_BENCHMARKS = ("sa-bench", "sa_bench", "random", "sharegpt")


_EVAL_RE = re.compile(r"(^|[/_-])evals?([/_.-]|$)")


@functools.lru_cache(maxsize=4096)     # asked per file by several readers
def eval_from_path(relpath):
    """True for recipes that exist to run accuracy evaluations (``...-eval-agentic.yaml``)."""
    return bool(_EVAL_RE.search(relpath.lower().rsplit("/", 1)[-1]))


def agentic_from_benchmark(benchmark):
    """True / False / None from a recipe's ``benchmark:`` (``type``, ``isl``, ``osl``,
    ``command``): a fixed-length client or literal lengths say fixed, an agentic
    type says agentic, a ``custom`` command (run with ``bash -lc``,
    NVIDIA/srt-slurm ``src/srtctl/benchmarks/custom.py``) is read as a
    launcher's client.
    """
    if not benchmark:
        return None
    kind = str(benchmark.get("type") or "").strip().lower()
    if "agentic" in kind or "agentx" in kind:
        return True
    if kind in FIXED_BENCHMARKS:
        return False
    command = benchmark.get("command")
    if command:
        said = agentic_from_client(str(command))
        if said is not None:
            return said
    lengths = [str(benchmark.get(key) or "").strip() for key in ("isl", "osl")]
    if all(v.isdigit() for v in lengths):
        return False
    return None


# a benchmark client run at fixed input/output lengths: vLLM's ``bench serve
# --random-input-len``, SGLang's ``bench_serving --random-input``, InferenceX's
# ``run_benchmark_serving --input-len``, ``--isl``/``--osl``; an agentic run replays traces
# (the ``--`` comes first, with the character before it checked behind, so that the
# regex engine can skip ahead to each ``--`` instead of trying every position)
_FIXED_CLIENT_RE = re.compile(r"--(?<![\w-]--)(?:(?:random-)?(?:input|output)-len|"
                              r"random-(?:input|output)|isl|osl)(?=[\s=\"']|$)", re.M)
_AGENTIC_CLIENT_RE = re.compile(r"\btraces?\b|trace_source|agentic", re.I)
# a benchmark client of any kind: vLLM's ``bench serve`` / ``benchmark_serving``, SGLang's
# ``bench_serving``, sa-bench, genai-perf, aiperf, guidellm, InferenceX's
# ``run_benchmark_serving`` (a server started where none runs is a serving example)
BENCH_CLIENT = re.compile(r"bench|genai-perf|aiperf|guidellm|locust", re.I)
# a client flag and the word after it (``--flag value``, ``--flag=value``, quoted or not);
# the value ends at the first blank or quote, so each flag costs one scan of its word
_CLIENT_FLAG_RE = re.compile(r"--(?<![\w-]--)(scenario|public-dataset|custom-dataset-type|"
                             r"dataset-name)(?:=|[ \t]+)[\"']?([^\s\"']*)")
# commands only an agentic (trace replay) client runs, as words of the code, and the
# AgentX trace dataset chosen by an assignment (``WEKA_LOADER_OVERRIDE=...``,
# ``DATASET="semianalysis_cc_traces_weka_062126"``): a name merely listed (a variable
# forwarded to a container) runs nothing
_AGENTIC_WORD_RE = re.compile(
    r"(?<![\w-])(?:resolve_trace_source|build_replay_cmd|run_agentic_replay_and_write_outputs|"
    r"agentic_srt\.sh)(?![\w-])|(?<![\w-])WEKA_LOADER_OVERRIDE=|"
    r"=[\"']?semianalysis_cc_traces_weka")
# a word each of its alternatives starts with (after ``=["']?`` for the last)
_AGENTIC_WORDS = ("resolve_trace_source", "build_replay_cmd", "run_agentic_replay",
                  "agentic_srt.sh", "WEKA_LOADER_OVERRIDE=", "semianalysis_cc_traces_weka")


def _runs_agentic_words(text, code=False):
    # the pattern is tried only where one of its words starts (or two characters before,
    # for ``="``): a search would try it at every position of the launcher
    for word in _AGENTIC_WORDS:
        at = text.find(word)
        while at >= 0:
            if any(_AGENTIC_WORD_RE.match(text, i) for i in range(max(at - 2, 0), at + 1)) \
                    and not (code and _commented(text, at)):
                return True
            at = text.find(word, at + 1)
    return False


def _commented(text, at):
    """True when ``text[at]`` (not a blank) is on a comment line."""
    return text[text.rfind("\n", 0, at) + 1:at + 1].lstrip()[0] == "#"


class ClientSignal(NamedTuple):
    """One row of docs/policy.md §5: a client ``flag`` (None for a bare command), the
    ``values`` that decide (by prefix), the ``agentic`` answer and the upstream ``source``.
    """

    flag: "str | None"
    values: tuple
    agentic: bool
    source: str


# Verified against the upstream files named (docs/policy.md §5 lists the same rows).
CLIENT_SIGNALS = (
    # aiperf's scenario registry: ``inferencex-agentx-mvp`` replays InferenceX's AgentX traces
    ClientSignal("--scenario", ("inferencex-agentx",), True,
                 "ai-dynamo/aiperf src/aiperf/common/scenario/registry.py"),
    # the trace loaders that scenario requires (``require_loader``)
    ClientSignal("--public-dataset", ("semianalysis_cc_traces_weka", "weka_hf"), True,
                 "ai-dynamo/aiperf src/aiperf/common/scenario/inferencex_agentx_mvp.py"),
    ClientSignal("--custom-dataset-type", ("weka_trace",), True,
                 "ai-dynamo/aiperf src/aiperf/common/scenario/inferencex_agentx_mvp.py"),
    # InferenceX's agentic helpers and multi-node driver
    ClientSignal(None, ("resolve_trace_source", "build_replay_cmd",
                        "run_agentic_replay_and_write_outputs", "WEKA_LOADER_OVERRIDE"), True,
                 "SemiAnalysisAI/InferenceX benchmarks/benchmark_lib.sh"),
    ClientSignal(None, ("agentic_srt.sh",), True,
                 "SemiAnalysisAI/InferenceX benchmarks/multi_node/agentic_srt.sh"),
    # SGLang 0.5.23's trace replay (``sglang/benchmark/serving.py:2332``)
    ClientSignal("--dataset-name", ("agentic-trace",), True,
                 "sgl-project/sglang python/sglang/benchmark/serving.py"),
    # a dataset of random tokens at set input/output lengths
    ClientSignal("--dataset-name", ("random", "random-mm", "random-rerank",
                                    "prefix_repetition"), False,
                 "vllm-project/vllm vllm/benchmarks/datasets.py"),
    ClientSignal("--dataset-name", ("random", "random-ids", "generated-shared-prefix"), False,
                 "sgl-project/sglang python/sglang/bench_serving.py"),
    ClientSignal("--random-input-len", (), False, "vllm-project/vllm vllm/benchmarks/datasets.py"),
    ClientSignal("--input-len", (), False, "SemiAnalysisAI/InferenceX benchmarks/benchmark_lib.sh"),
    ClientSignal("--isl", (), False, "ai-dynamo/aiperf src/aiperf/common/config/prompt_config.py"),
)
_FLAG_ANSWERS = {}
for _s in CLIENT_SIGNALS:
    if _s.flag and _s.values:
        for _v in _s.values:
            _FLAG_ANSWERS.setdefault(_s.flag[2:], {})[_v] = _s.agentic


def _flag_answer(flag, value):
    """True / False / None from one client flag's value (exact names; a scenario by prefix)."""
    value = value.lower()
    answers = _FLAG_ANSWERS.get(flag, {})
    if value in answers:
        return answers[value]
    if flag in ("scenario", "public-dataset"):
        for prefix, answer in answers.items():
            if value.startswith(prefix):
                return answer
    return None


def code_of(text):
    """``text`` without comment lines, its lines as :meth:`str.splitlines` reads them."""
    return "\n".join([line for line in text.splitlines() if not line.lstrip().startswith("#")])


# str.splitlines' line breaks but ``\n``; \s is str.isspace's whitespace, as lstrip's
_OTHER_BREAKS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def client_signals(text):
    """``(agentic, fixed)``: whether the code of ``text`` (comments dropped) runs an
    agentic client (AgentX scenario, trace datasets, replay helpers) and a
    fixed-length one (random-token dataset, input/output lengths); both may hold.
    """
    if "--" not in text and not _runs_agentic_words(text):
        return False, False
    # no pattern spans a line: the code's matches are the text's off comment lines
    code = code_of(text) if any(ch in text for ch in _OTHER_BREAKS) else text
    agentic = _runs_agentic_words(code, code=True)
    fixed = any(not _commented(code, m.start()) for m in _FIXED_CLIENT_RE.finditer(code))
    if "--" in code:
        for m in _CLIENT_FLAG_RE.finditer(code):
            if _commented(code, m.start()):
                continue
            answer = _flag_answer(m.group(1), m.group(2))
            if answer is True:
                agentic = True
            elif answer is False:
                fixed = True
    return agentic, fixed


def agentic_from_client(text):
    """True / False from the benchmark client ``text`` runs when only one kind of
    client runs; None for both or neither (left to branches or the path).
    """
    agentic, fixed = client_signals(text)
    if agentic and not fixed:
        return True
    if fixed and not agentic:
        code = code_of(text)
        # every match holds "trace" or "agent", letters re.I folds as lower() does
        low = code.lower()
        if not (("trace" in low or "agent" in low) and _AGENTIC_CLIENT_RE.search(code)):
            return False
    return None


def agentic_of(relpath, name=None, benchmark=None, names=()):
    """Agentic (True / False / None), the one test ``audit`` and ``inject`` share: the
    ``benchmark:`` settings, then the recipe's and variants' ``names``, then the
    path relative to the repository root (:func:`repository_path`).
    """
    agentic = agentic_from_benchmark(benchmark)
    if agentic is not None:
        return agentic
    said = {agentic_from_name(n) for n in (name, *names) if n}
    said.discard(None)
    if len(said) == 1:
        return said.pop()
    return agentic_from_path(relpath)


def agentic_from_name(name):
    """True / False / None from a recipe, variant or job name (``dsv4-8k1k-mtp``)."""
    low = str(name).lower()
    if "agentic" in low or "agentx" in low:
        return True
    if _FIXED_RE.search(low):
        return False
    return None


def repository_path(path, root=None):
    """``path`` relative to its git root, else ``root``: the scenario read from it does
    not depend on how the file was named on the command line.
    """
    import os

    from goldenal.core.files import repository_root

    full = os.path.abspath(path)
    top = repository_root(os.path.dirname(full))
    if top is not None:
        return os.path.relpath(full, top).replace(os.sep, "/")
    base = os.path.abspath(root) if root else os.getcwd()
    rel = os.path.relpath(full, base)
    # outside any repository and outside ``root``: the whole path is all there is
    return (full if rel.startswith("..") else rel).replace(os.sep, "/")


@functools.lru_cache(maxsize=4096)     # asked per file by several readers
def agentic_from_path(relpath):
    """True for agentic recipe paths, False for fixed-sequence-length ones, else None."""
    said = agentic_from_name(relpath)
    # benchmark launchers outside an agentic folder run fixed-length sweeps
    if said is None and ("single_node/" in relpath.lower() or "multi_node/" in relpath.lower()):
        return False
    return said


# -------------------------------------------------------------- image versions

_VERSION_RE = re.compile(r"[:v-](\d+)\.(\d+)(?:\.(\d+))?")


def image_version(image):
    """``(major, minor, patch)`` of a container tag; None for nightly or untagged images."""
    if not image or "nightly" in image:
        return None
    tag = image.rsplit(":", 1)[-1] if ":" in image else image
    m = _VERSION_RE.search(":" + tag)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def source_stated(lines, line, window=6):
    """True when a comment within ``window`` lines above ``line`` names the value's source."""
    lo = max(0, line - 1 - window)
    for text in lines[lo:line]:
        s = text.strip()
        if "#" not in s:
            continue
        comment = s[s.index("#"):].lower()
        if ("source" in comment or "pending" in comment or "http" in comment
                or "golden_al_distribution" in comment or "run " in comment):
            return True
    return False


def cited_curves(lines, line, value, ids, window=6, paragraph=12):
    """Curve ids (by id, file name or URL) that comments next to the knob cite.

    Comments on the knob's line and ``window`` lines above count, and those near
    a line assigning the literal ``value`` (two lines above, and the whole-line
    comments of its paragraph, at most ``paragraph`` lines).  Of two ids one of
    which contains the other, the longer is meant.
    """
    rows = set(range(max(0, line - 1 - window), min(len(lines), line)))
    if value:
        for i, text in enumerate(lines):
            if value in text and "=" in text:
                rows.update(range(max(0, i - 2), i + 1))
                top = i
                while top > max(0, i - paragraph) and lines[top - 1].strip():
                    top -= 1
                    if lines[top].lstrip().startswith("#"):
                        rows.add(top)
    found = set()
    for i in sorted(rows):
        text = lines[i]
        if "#" not in text:
            continue
        comment = text[text.index("#"):]
        found.update(c for c in ids if c in comment)
    return tuple(sorted(c for c in found if not any(c != o and c in o for o in found)))


# --------------------------------------------------------------- suppressions

SUPPRESS_RE = re.compile(r"#\s*goldenal:\s*ignore\[([A-Za-z0-9_,\s-]+)\]")


def suppressions(lines):
    """``{line_number: set(codes)}`` of inline ``# goldenal: ignore[CODE,...]`` comments."""
    out = {}
    if "goldenal" not in "\n".join(lines):
        return out          # the common case, found in one pass
    for i, text in enumerate(lines):
        if "goldenal" not in text:
            continue
        m = SUPPRESS_RE.search(text)
        if m:
            out[i + 1] = {c.strip().upper() for c in m.group(1).split(",") if c.strip()}
    return out
