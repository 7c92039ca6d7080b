"""vLLM server logs: every family of spec-decode metrics lines (docs/formats.md §1), the
tags, fields and current line's format named by the engine record.

A family D line in vLLM's logger layout is read from the raw bytes (on a large
log by the compiled ``_logscan.c`` and column-wise ``_blockwise.py``); every
path gives the same records (tests/test_ingest_speed_paths.py).
"""

import ast
import importlib
import os
import re
import sys

from goldenal.readers import _io
from goldenal.readers._base import Context, balanced, counts_from_rates, derive_drafts
from goldenal.core.observation import Observation
from goldenal.readers.observations import Columns, ServerStart, as_row, make_observation
from goldenal.readers.records import record

try:  # the compiled scan; without it every hit is matched in Python
    # by name: an extension module is no node of the import graph the layer
    # contracts check, which would count ``from goldenal.readers import`` as
    # importing the package
    _logscan = importlib.import_module("goldenal.readers._logscan")
except ImportError:  # pragma: no cover - an install that could not compile it
    _logscan = None

NAME = "vllm-log"
ENGINE = "vllm"
_LOG = record(ENGINE).log_lines
_V1_TAG, _V0_TAG = (tag + ":" for tag in _LOG["tags"])

_PREFIX = re.compile(r"\((\w+) pid=(\d+)\)")
_STAMP = re.compile(r"\b(\d\d-\d\d \d\d:\d\d:\d\d)\b")
_ENGINE_ID = re.compile(rb"\bEngine (\d+): ")
# the current (family D) line exactly as vLLM formats it (the record's format string, each
# value's syntax in turn): one match instead of a field-by-field parse for the lines that
# make up nearly all of a large log
_VALUES = (r"(\d+\.\d+)", r"\d+(?:\.\d+)?", r"\d+(?:\.\d+)?", r"(\d+)", r"(\d+)",
           r"(\d\.\d{3}(?:, \d\.\d{3})*)", r"(\d+\.\d)", "")
_BODY = re.escape(_V1_TAG + " ") + "".join(
    re.escape(text) + value for text, value in
    zip(re.split(r"%[.\d]*[dfs]", "".join(_LOG["line"]).replace("%%", "%")), _VALUES))
_FAST = re.compile(_BODY + r"\s*$")
# the same line as bytes, matched in the raw block without decoding; it admits a
# subset of what _FAST admits on the decoded line (ASCII digits, trailing blanks
# and CRs), so a line it takes reads exactly as the text path would read it
_FAST_B = re.compile(_BODY.encode() + rb"[ \t\f\v\r]*(?:\n|\Z)")
# ... and the whole line in vLLM's own logger layout, "(APIServer pid=N) INFO
# MM-DD hh:mm:ss [file.py:n] " first: its process and time stamp are then the
# ones the prefix search finds, with no separate look at the prefix
_FAST_LINE = re.compile(rb"(?:\((\w+) pid=(\d+)\) )?[A-Z]+ (\d\d-\d\d \d\d:\d\d:\d\d) "
                        rb"\[[\w.]+:\d+\] " + _FAST_B.pattern)
SPEC_D = (_V1_TAG + " ").encode()  # long needle: a fast two-way search
# lines only the general path reads: V0 metrics and start-up configuration
_RARE = b"peculative"
_RARE_MARKERS = ((_V0_TAG + " ").encode(), b"speculative_config")
_VERSION = re.compile(r"server version:? v?(\S+)")
_KEY = re.compile(r"[A-Za-z][A-Za-z /()\-]*")

_COUNT = re.compile(r"(\d+)(?: tokens)?")
_FLOAT = re.compile(r"(\d+(?:\.\d+)?|nan)", re.I)
_PCT = re.compile(r"(\d+(?:\.\d+)?|nan)%?", re.I)
_RATE = re.compile(r"\d+(?:\.\d+)?")
# the record's fields, as split_fields keys them (lower case)
(_ACCEPTED, _DRAFTED, _N_ACCEPTED, _N_DRAFT, _N_EMITTED, _N_SPEC, _MEAN, _EFFICIENCY, _DRAFT_RATE,
 _AVG_RATE, _, _, _POSITIONS) = (name.lower() for name in _LOG["fields"])
_SAID_A, _SAID_D = _LOG["fields"][:2]  # the two counts as printed
# value syntax of every field we use, in the record's order; a field that does not match
# is damage (a cut line, another process's output spliced in), never a number to guess
_SYNTAX = dict(zip((name.lower() for name in _LOG["fields"]),
                   (_COUNT,) * 6 + (_FLOAT,) * 2 + (_PCT,) * 2
                   + (re.compile(r"(\d+(?:\.\d+)?) tokens/s"),) * 2))


class _Damaged(ValueError):
    pass


def sniff_metrics(head: str) -> bool:
    """True when the text holds vLLM spec-decode metrics lines (a decisive marker)."""
    return _V1_TAG in head or _V0_TAG in head


def sniff(head: str) -> bool:
    """True when the text looks like a vLLM server log (spec lines or start-up lines)."""
    if sniff_metrics(head):
        return True
    return any(s in head for s in _LOG["startup"])


def split_fields(message):
    """``(fields, order, positions)`` of ``Key: value, ...``; ValueError for damage."""
    fields, order, positions, current = {}, [], None, None
    message = message.strip()
    if message.endswith("."):  # V0 lines end with a full stop
        message = message[:-1]
    for token in message.split(","):
        token = token.strip()
        if not token:
            continue
        key, sep, value = token.partition(":")
        if sep:
            key = key.strip()
            if not _KEY.fullmatch(key):
                raise _Damaged(f"unexpected text {token[:60]!r}")
            key = key.lower().replace("tokens tokens", "tokens")
            value = value.strip()
            syntax = _SYNTAX.get(key)
            if syntax is not None and not syntax.fullmatch(value):
                raise _Damaged(f"malformed value {token[:60]!r}")
            fields[key] = value
            order.append(key)
            current = key
            if key == _POSITIONS:
                positions = [value] if value else []
        elif current == _POSITIONS:
            positions.append(token)
        else:
            raise _Damaged(f"unexpected text {token[:60]!r}")
    if positions is not None:
        for value in positions:
            if not _RATE.fullmatch(value):
                raise _Damaged(f"malformed per-position value {value[:30]!r}")
    return fields, order, positions


def _value(pattern, value, cast=float):
    return cast(pattern.match(value).group(1)) if value is not None else None


# vLLM's counts are 64-bit integers; a printed count past that is damage, and past a
# float's range its ratios overflow
_MAX_COUNT = 2 ** 63 - 1


# K of a start-up config, or under the per-request field's name (older configs)
_K_NAME = record(ENGINE).count_fields["k"][0]
_CFG_K = re.compile(rf"""\b(?:num_speculative_tokens|{_K_NAME})['"]?\s*[:=]\s*(\d+)""")
_CFG_STR = r"""(?<![\w])['"]?{}['"]?\s*[:=]\s*['"]([^'"]+)['"]"""
_CFG_NUM = r"""(?<![\w])['"]?{}['"]?\s*[:=]\s*([0-9.]+)"""


def knob_names():
    """``(length, rates, rejection method)`` knob names, from the engine's record."""
    length, rates, _, method = record(ENGINE).knobs
    return length, rates, method


def parse_spec_config(text):
    """Speculative settings stated at start-up (a dict repr or ``SpeculativeConfig(...)``):
    some of ``k``, ``method``, ``draft`` and the :func:`knob_names`."""
    pos = text.find("speculative_config")
    if pos < 0:
        return {}
    rest = text[pos:]
    opener = re.search(r"[{(]", rest)
    if opener is None or opener.start() > 40:
        return {}
    body = balanced(rest, opener.start()) or rest
    if body.startswith("{"):
        try:
            value = ast.literal_eval(body)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = None  # TypeError: a literal that cannot be built, e.g. {{}: 1}
        if isinstance(value, dict):
            return _from_mapping(value)
    # a repr: each setting by its own pattern, then read as the mapping would be
    length, rates, rejection = knob_names()
    found = {}
    m = _CFG_K.search(body)
    if m:
        found["num_speculative_tokens"] = int(m.group(1))
    for name in ("method", "model", rejection):
        m = re.search(_CFG_STR.format(name), body)
        if m:
            found[name] = m.group(1)
    m = re.search(_CFG_NUM.format(length), body)
    try:
        found[length] = float(m.group(1)) if m else None
    except ValueError:
        pass  # not a number: the knob is not set to anything usable
    m = re.search(rates + r"['\"]?\s*[:=]\s*(\[[^\]]*\])", body)
    try:
        found[rates] = ast.literal_eval(m.group(1)) if m else None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    return _from_mapping(found)


def _from_mapping(cfg):
    length, rates, rejection = knob_names()
    out = {}
    k = cfg.get("num_speculative_tokens", cfg.get(_K_NAME))
    if isinstance(k, int):
        out["k"] = k
    for key, name in (("method", "method"), ("draft", "model"), (rejection, rejection),
                      ("draft_sample_method", "draft_sample_method")):
        if isinstance(cfg.get(name), str):
            out[key] = cfg[name]
    if isinstance(cfg.get(length), (int, float)):
        out[length] = float(cfg[length])
    if isinstance(cfg.get(rates), list):
        try:
            out[rates] = [float(x) for x in cfg[rates]]
        except (TypeError, ValueError):
            pass  # not numbers: no usable rates
    return out


def _server_start(number, cfg):
    """The engine-neutral :class:`ServerStart` of one start-up line's settings."""
    length, rates, rejection = knob_names()
    knob = pinned = None
    stated = ""
    if length in cfg:
        knob = pinned = cfg[length]
        stated = f"the server was started with {length}={knob:g}"
    elif rates in cfg:
        knob, pinned = cfg[rates], 1 + sum(cfg[rates])
        stated = f"the server's {rates} give AL {pinned:.4f}"
    variant = {key: cfg[key] for key in ("draft_sample_method", rejection) if key in cfg}
    return ServerStart(
        number, cfg.get("k"), "num_speculative_tokens", cfg.get("method"), cfg.get("draft"),
        variant, synthetic=knob is not None or cfg.get(rejection) == "synthetic", knob=knob,
        pinned=pinned, stated=stated, off=f"no {rejection}='synthetic'")


def fast_counts(accepted, drafted, rates, mean, pct, known):
    """``(k, steps, counts)`` of a whole family D line, or None to use the general path;
    ``drafted / K`` steps and rounded counts when they reproduce every figure."""
    k = len(rates)
    if max(accepted, drafted) > _MAX_COUNT:
        return None
    steps, rest = divmod(drafted, k)
    if rest or not drafted or (known is not None and known != k):
        return None
    if abs(1 + accepted / steps - mean) > 0.005 + 1e-9 or \
            abs(100 * accepted / drafted - pct) > 0.05 + 1e-9:
        return None
    counts = [round(r * steps) for r in rates]
    if sum(counts) == accepted:
        # strictly inside the rounding: a count on its edge may print as the next
        # value, which only the exact solve below checks
        tol, prev = 0.0005 * steps - 1e-6, steps
        for c, r in zip(counts, rates):
            if c > prev or abs(c - r * steps) >= tol:
                break
            prev = c
        else:
            return k, steps, tuple(counts)
    # rounding moved the sum off A: solve for the integers properly
    counts = counts_from_rates(steps, rates, accepted, 0.0005 + 1e-9)
    return None if counts is None else (k, steps, counts)


class _Reader:
    def __init__(self, ctx):
        self.ctx = ctx
        self.source = ctx.path
        self.config = {}          # latest start-up speculative config
        self.pending_engine = {}  # process -> "Engine NNN" id waiting for its spec line
        self.v0 = {}              # process -> previous cumulative V0 totals
        self.skipped_empty = 0
        ctx.facts["server_start"] = []

    @property
    def k_known(self):
        return self.config.get("k", self.ctx.k_hint)

    def line(self, number, text, terminated, previous=b""):
        pos = text.find(_V1_TAG)
        if pos >= 0:
            m = _FAST.match(text, pos)
            if m is not None:
                obs = self.fast(number, text[:pos], m, previous)
                if obs is not None:
                    return obs
        old = pos < 0
        if old:
            pos = text.find(_V0_TAG)
        if pos < 0:
            self.other(number, text)
            return
        prefix = text[:pos]
        m = _PREFIX.search(prefix)
        process = m.group(2) if m else ""
        m = _STAMP.search(prefix)
        stamp = m.group(1) if m else None
        message = text[pos + len(_V0_TAG if old else _V1_TAG):]
        # another process's output spliced into this line: parse each message
        again = max(message.find(_V1_TAG), message.find(_V0_TAG))
        if again >= 0:
            self.ctx.refuse(number, "two metrics messages on one line (interleaved output); "
                                    "the first is cut and was skipped")
            return self.line(number, message, terminated)
        self.pending_engine.pop(process, None)
        dp = _dp_engine(b"", 0, previous, _ENGINE_ID.search)  # an ``Engine NNN:`` line before
        if dp is not None:
            self.pending_engine[process] = str(int(dp))
        try:
            fields, order, positions = split_fields(message)
        except _Damaged as exc:
            return self.ctx.refuse(number, f"damaged spec-decode line: {exc}")
        if old:
            family = self.family_a if _N_EMITTED in fields else self.family_b
        elif positions is not None:
            family = self.family_cd
        else:
            family = self.family_b
        if not terminated and not self._complete(message, order, old):
            return self.ctx.refuse(number, "truncated last line (no newline, fields missing)")
        return family(number, fields, order, positions, process, stamp, terminated)

    @staticmethod
    def _complete(message, order, old):
        """Whether an unterminated last line provably ends where its format ends."""
        if old:  # V0 ends with a full stop; the first V1 build with ", "
            return message.rstrip().endswith(".") or message.endswith(", ")
        tail = message.rstrip()
        return bool(order) and ((order[-1] == _AVG_RATE and tail.endswith("%"))
                                or (order[-1] == _DRAFTED and tail.endswith(" tokens")))

    def fast(self, number, prefix, m, previous):
        """Family D line matched whole (the common case); None hands it to the general path."""
        mean_s, accepted_s, drafted_s, rates_s, pct_s = m.groups()
        accepted, drafted, mean = int(accepted_s), int(drafted_s), float(mean_s)
        got = fast_counts(accepted, drafted, list(map(float, rates_s.split(", "))), mean,
                          float(pct_s), self.k_known)
        if got is None:
            return None
        k, steps, counts = got
        i = prefix.find("pid=")
        j = prefix.find(")", i) if i >= 0 else -1
        process = prefix[i + 4:j] if j > 0 else ""
        flat = iter(_extra_items(process, _dp_engine(b"", 0, previous, _ENGINE_ID.search)))
        extra = dict(zip(flat, flat))
        stamp = _STAMP.search(prefix)
        return Observation(self.source, number, ENGINE, "vllm-log-v1", k, steps, drafted,
                           accepted, counts, mean, None, stamp.group(1) if stamp else None,
                           None, None, extra)

    def other(self, number, text):
        if "speculative_config" in text:
            cfg = parse_spec_config(text)
            if cfg:
                was = self.config.get("k")
                restarted = was is not None and cfg.get("k") not in (None, was)
                if restarted:
                    self.ctx.remark(number, f"server restarted with num_speculative_tokens="
                                            f"{cfg['k']} (was {was})")
                # one server states its config on several lines; a new K is a new server
                self.config = dict(cfg) if restarted else {**self.config, **cfg}
                self.ctx.facts["server_start"].append(_server_start(number, cfg))
                self.v0.clear()  # a new server: cumulative counters start again

    def _extra(self, process):
        extra = {}
        if process:
            extra["process"] = process
        engine = self.pending_engine.pop(process, None)
        if engine is not None:
            extra["dp_engine"] = engine
        return extra

    # -- family A: V0 cumulative -------------------------------------------------
    def family_a(self, number, f, order, positions, process, stamp, terminated):
        k, drafted, emitted = (_value(_COUNT, f.get(name), int)
                               for name in (_N_SPEC, _N_DRAFT, _N_EMITTED))
        if k is None or drafted is None or emitted is None or k == 0:
            return self.ctx.refuse(number, "V0 line without K, draft or emitted tokens")
        efficiency = _value(_FLOAT, f.get(_EFFICIENCY))
        if drafted % k:
            return self.ctx.refuse(number, f"V0 draft tokens {drafted} not a multiple of K={k}")
        if efficiency is not None and efficiency == efficiency and drafted:
            # printed efficiency = emitted / ((draft/K) * (K+1)), three decimals
            exact = emitted / (drafted // k * (k + 1))
            if abs(exact - efficiency) > 0.0005 + 1e-9:
                return self.ctx.refuse(number, f"counts contradict the printed system efficiency "
                                               f"{efficiency:.3f} (emitted {emitted} / steps "
                                               f"{drafted // k} / {k + 1} = {exact:.4f})")
        prev = self.v0.get(process)
        if prev is not None and (prev[0] != k or drafted < prev[1] or emitted < prev[2]):
            self.ctx.remark(number, "V0 counters went down or K changed: a restarted engine; "
                                    "counting from zero again")
            prev = None
        self.v0[process] = (k, drafted, emitted, number)
        base_d, base_e, start = (0, 0, None) if prev is None else prev[1:]
        d_tokens, d_emitted = drafted - base_d, emitted - base_e
        extra = self._extra(process)
        if d_tokens == 0:
            self.skipped_empty += 1
            return None
        steps = d_tokens // k
        accepted = d_emitted - steps  # emitted = accepted prefix + one bonus per step
        if not 0 <= accepted <= d_tokens:
            self.ctx.refuse(number, f"V0 window emitted {d_emitted} tokens over {steps} steps: "
                                    f"impossible for K={k}")
            return None
        extra["cumulative"] = True
        mean = None
        if prev is None:
            extra["window"] = "since-start"
            mean = round(efficiency * (k + 1), 6) if efficiency is not None else None
        return Observation(self.source, start if start is not None else number, ENGINE,
                           "vllm-log-v0", k, steps, d_tokens, accepted, None, mean,
                           number if start is not None else None, stamp, None, None, extra)

    def _counts(self, number, accepted, drafted):
        """``(accepted, drafted)``; drafted None or 0 when the window is refused or empty."""
        accepted, drafted = _value(_COUNT, accepted, int), _value(_COUNT, drafted, int)
        if accepted is None or drafted is None:
            self.ctx.refuse(number, f"spec-decode line without {_SAID_A}/{_SAID_D} counts")
            return None, None
        if max(accepted, drafted) > _MAX_COUNT:
            self.ctx.refuse(number, f"{_SAID_A}/{_SAID_D} past 2^63-1: not counts")
            return None, None
        if drafted == 0:  # the 'nan%' lines printed with speculation off
            self.skipped_empty += 1
        return accepted, drafted

    # -- family B: early V1, no D ---------------------------------------------------
    def family_b(self, number, f, order, positions, process, stamp, terminated):
        accepted, drafted = got = self._counts(
            number, f.get(_ACCEPTED, f.get(_N_ACCEPTED)), f.get(_DRAFTED, f.get(_N_DRAFT)))
        if not got[1]:
            return None
        rate = _value(_PCT, f.get(_DRAFT_RATE, f.get(_AVG_RATE)))
        if rate is not None and rate == rate:
            exact = accepted / drafted
            fraction = _N_ACCEPTED in f  # first V1 build printed a fraction
            allowed = (0.0005 if fraction else 0.05) + 1e-9
            if abs((exact if fraction else 100 * exact) - rate) > allowed:
                return self.ctx.refuse(number, f"counts contradict the printed acceptance rate "
                                               f"({accepted}/{drafted} vs {rate})")
        mean = _value(_FLOAT, f.get(_MEAN))
        k = self.k_known
        extra = self._extra(process)
        steps = None
        if k and drafted % k == 0:
            steps = drafted // k
            extra["drafts_from"] = "drafted/k (assumes every step drafted K tokens)"
            extra["approximate"] = True
            if mean is not None and abs(1 + accepted / steps - mean) > 0.005 + 1e-9:
                steps = None
        fmt = "vllm-log-v1-early" if _DRAFTED in f else "vllm-log-v1-first"
        return Observation(self.source, number, ENGINE, fmt, k, steps, drafted, accepted,
                           None, mean, None, stamp, None, None, extra)

    # -- families C and D: V1 with per-position survival ---------------------------------
    def family_cd(self, number, f, order, positions, process, stamp, terminated):
        accepted, drafted = got = self._counts(number, f.get(_ACCEPTED), f.get(_DRAFTED))
        if not got[1]:
            return None
        rates = [float(x) for x in positions]
        k = len(rates)
        known = self.k_known
        if known is not None and known != k:
            return self.ctx.refuse(number, f"per-position list has {k} entries but the server runs "
                                           f"num_speculative_tokens={known}")
        if k == 0:
            return self.ctx.refuse(number, "empty per-position list")
        mean = _value(_FLOAT, f.get(_MEAN))
        rate = _value(_PCT, f.get(_AVG_RATE, f.get(_DRAFT_RATE)))
        if rate is not None and rate == rate and abs(100 * accepted / drafted - rate) > 0.05 + 1e-9:
            self.ctx.refuse(number, f"counts contradict the printed acceptance rate "
                                    f"({accepted}/{drafted} = {100 * accepted / drafted:.2f}% "
                                    f"vs {rate}%)")
            return None
        derived = derive_drafts(accepted, rates, half=0.0005, mean=mean, drafted=drafted, k=k)
        if derived is None:
            detail = [f"printed mean {mean}" if mean is not None else "no printed mean"]
            if sum(rates) and accepted and accepted / sum(rates):  # an infinite rate: 0
                steps = accepted / sum(rates)
                detail.append(f"{_SAID_A} {accepted} / per-position sum {sum(rates):.3f} = "
                              f"{steps:.1f} steps -> AL {1 + accepted / steps:.3f}")
            if drafted and drafted % k == 0:
                detail.append(f"{_SAID_D} {drafted} / K={k} = {drafted // k} steps -> AL "
                              f"{1 + accepted / (drafted // k):.3f}")
            self.ctx.refuse(number, "counts contradict the printed mean: no step count "
                                    "reproduces every printed figure (" + "; ".join(detail) + ")")
            return None
        steps, per_pos, how = derived
        extra = self._extra(process)
        extra["drafts_from"] = how
        fmt = "vllm-log-v1-rate-first" if order[0] == _DRAFT_RATE else "vllm-log-v1"
        return Observation(self.source, number, ENGINE, fmt, k, steps, drafted, accepted,
                           per_pos, mean, None, stamp, None, None, extra)


def read(path, ctx: Context):
    """Yield one :class:`Observation` per metrics window (of :func:`read_parts`)."""
    for part in read_parts(path, ctx):
        for row in part.rows() if isinstance(part, Columns) else (part,):
            yield make_observation(row)


def read_parts(path, ctx: Context):
    """Yield the windows of a vLLM server log in order: rows, and :class:`Columns` runs.

    Family D lines are matched as bytes (in C by ``_logscan`` when compiled);
    other hits, and blocks holding V0 metrics or a start-up config, take the
    general text path in file order.
    """
    hits = _Hits(ctx)
    m = _VERSION.search(_io.decode(_io.read_head(path, 1 << 20)))
    if m:
        ctx.facts["version"] = m.group(1)
    number = 1  # line number of the start of the block
    # the compiled scan's records are read with numpy, whose import (~0.1 s) pays
    # for itself only on large logs
    use_kernel = _logscan is not None and \
        ("numpy" in sys.modules or _size(path) >= _KERNEL_FILE)
    if use_kernel:
        from goldenal.readers import _blockwise
    for buf, cut, before in _io.blocks(path, lambda: number):
        if use_kernel:
            newlines, records = _logscan.scan(buf, cut, _blockwise.KMAX, before)
            yield from _blockwise.read_block(hits, buf, cut, before, number, records,
                                             _RARE_MARKERS)
            number += newlines
            continue
        find = buf.find
        count = buf.count
        if find(_RARE, 0, cut) >= 0:  # a mixed block: every marked line, in order
            found = _line_starts(buf, cut, (SPEC_D,) + _RARE_MARKERS)
        else:  # the common block: positions of the family D tag, one per line
            found = []
            pos = find(SPEC_D, 0, cut)
            while pos >= 0:
                found.append(pos)
                pos = find(b"\n", pos, cut)
                if pos < 0:
                    break
                pos = find(SPEC_D, pos, cut)
        rfind = buf.rfind
        lines, starts, last, line = [], [], 0, number
        for pos in found:
            start = rfind(b"\n", 0, pos) + 1
            line += count(b"\n", last, start)
            last = start
            lines.append(line)
            starts.append(start)
        number = line + count(b"\n", last, cut)
        for pos, line, start in zip(found, lines, starts):
            row = hits.read(buf, cut, before, pos, line, start)
            if row is not None:
                yield row
    if hits.reader.skipped_empty:
        ctx.facts["skipped_empty"] = hits.reader.skipped_empty


class _Hits:
    """Reads one marked line at a time: the family D fast path, else the general path."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.reader = _Reader(ctx)
        self.source = self.reader.source
        # (process, DP engine) -> the rows' shared ``extra`` items: one tuple for all
        self.extras = {}
        self.prefixes = {}  # line prefix -> (process, stamp), or None when it needs decoding

    @property
    def k_known(self):
        return self.reader.k_known

    def extra(self, process, dp):
        extra = self.extras.get((process, dp))
        if extra is None:
            extra = self.extras[process, dp] = _extra_items(process, dp)
        return extra

    def read(self, buf, cut, before, pos, line, start):
        """The row of the marked line at ``start`` (its tag at ``pos``), or None."""
        fields = None
        m = _FAST_LINE.match(buf, start, cut)
        if m is not None:  # vLLM's usual layout: prefix and tag in one match
            _, process, stamp, *fields = m.groups()
            stamp = stamp.decode()
        else:  # another prefix layout: the tag matched in place, the prefix looked at
            m = _FAST_B.match(buf, pos, cut)
            if m is not None:
                prefix = bytes(buf[start:pos])
                info = self.prefixes.get(prefix, False)
                if info is False:
                    info = self.prefixes[prefix] = _prefix_info(prefix)
                if info is not None:
                    process, stamp = info
                    fields = m.groups()
        if fields is not None:
            mean_s, accepted_s, drafted_s, rates_s, pct_s = fields
            accepted, drafted, mean = int(accepted_s), int(drafted_s), float(mean_s)
            got = fast_counts(accepted, drafted, list(map(float, rates_s.split(b", "))),
                              mean, float(pct_s), self.k_known)
            if got is not None:
                k, steps, counts = got
                return (self.source, line, ENGINE, "vllm-log-v1", k, steps, drafted, accepted,
                        counts, mean, None, stamp, None, None,
                        self.extra(process, _dp_engine(buf, start, before, _ENGINE_ID.search)))
        # the general path: decode the line and parse it field by field
        obs = _general(self.reader, buf, cut, before, line, start)
        return None if obs is None else as_row(obs)


def _dp_engine(buf, start, before, engine_id):
    """The data-parallel engine tag (``Engine 001:``) on the line before ``start``, if any."""
    if start:
        p = buf.rfind(b"\n", 0, start - 1) + 1
        if buf.find(b"Engine ", p, start) >= 0:
            e = engine_id(buf, p, start)
            return e.group(1) if e else None
    elif b"Engine " in before:
        e = engine_id(before)
        return e.group(1) if e else None
    return None


def _general(reader, buf, cut, before, line, start):
    """The general path for the line at ``start``: decoded, parsed field by field."""
    end = buf.find(b"\n", start, cut)
    terminated = end >= 0
    text = _io.decode(bytes(buf[start:end if terminated else cut]).rstrip(b"\r"))
    previous = bytes(buf[buf.rfind(b"\n", 0, start - 1) + 1:start]) if start else before
    return reader.line(line, text, terminated, previous)


def _extra_items(process, dp):
    """``extra`` of a fast-path window as the row keeps it: keys and values, flat."""
    items = []
    if process:
        items += ("process", process.decode() if isinstance(process, bytes) else process)
    if dp is not None:
        items += ("dp_engine", str(int(dp)))
    items += ("drafts_from", "drafted/k")
    return tuple(items)


_STAMP_B = re.compile(rb"\b(\d\d-\d\d \d\d:\d\d:\d\d)\b")


def _prefix_info(prefix):
    """``(process, stamp)`` of a line prefix that reads the same raw as decoded, else None
    (colour codes, CRs, non-ASCII bytes or an earlier tag: the general path)."""
    if not prefix.isascii() or b"\x1b" in prefix or b"\r" in prefix \
            or _V1_TAG.encode() in prefix:
        return None
    i = prefix.find(b"pid=")
    j = prefix.find(b")", i) if i >= 0 else -1
    process = prefix[i + 4:j].decode() if j > 0 else ""
    # _STAMP's leftmost match, tried only where a match can start (two before a
    # "-"): the stamp is usually the first dash, so no scan of every offset
    dash = prefix.find(b"-", 2)
    while dash >= 0:
        m = _STAMP_B.match(prefix, dash - 2)
        if m:
            return process, m.group(1).decode()
        dash = prefix.find(b"-", dash + 1)
    return process, None


_KERNEL_FILE = 1 << 24  # from this size on, worth importing numpy for the compiled scan


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _line_starts(buf, cut, markers):
    """One offset per line holding any marker, in order: its family D tag, else its start."""
    out = []
    for start in _io.marked_line_starts(buf, cut, markers):
        end = buf.find(b"\n", start, cut)
        pos = buf.find(SPEC_D, start, end if end >= 0 else cut)
        out.append(pos if pos >= 0 else start)
    return out
