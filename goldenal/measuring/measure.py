"""Measure acceptance on a live server: one measurement-run cell per (thinking mode, K).

The same prompts in the same order at every K (paired, checked by digest); every answer is
bounded (:class:`ResponseLimit`) and no credential in a URL is ever written."""

from __future__ import annotations

import asyncio
import datetime
import errno
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from goldenal.core.errors import (ConflictError, CounterReset, GoldenALError, ParseError,
                             RoundedCounters, ServerError, UsageError)

from goldenal.core.files import locked_directory, read_regular, size_text, write_texts_atomic
from goldenal.engines import ENGINES
from goldenal.readers import load_run
from goldenal.readers.measured import SCHEMA
from goldenal.readers.prometheus import (Scrape, rounded_counters, rounded_message, spec_mentions,
                                         window as counter_window)
from goldenal.readers.records import record, records
from goldenal.readers.run import manifest_text, normalize_identity, read_manifest
from goldenal.readers.sglang import META_KEY, InconsistentCounts, spec_details
from goldenal.readers.sglang import request_counts as meta_counts
from goldenal.readers.vllm_bench import request_counts, request_metrics

_PROCESS_START = re.compile(r"^process_start_time_seconds(?:\{[^}]*\})?\s+(\S+)", re.M)

# the per-request draft counts an answer carries beside its usage, as the engine record names
# them (kept in goldenal's records as their "timings")
_TIMED = next(r.count_fields for r in records().values() if "drafted" in r.count_fields)
_TIMINGS, _TIMED_DRAFTS, _TIMED_ACCEPTED = (_TIMED[key][0] for key in (
    "timings", "drafted", "accepted"))


class MeasureError(GoldenALError):
    """A cell could not be measured: the server disagrees with the request, or all failed."""

    exit_code = 1


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself (speculative settings in engine spellings)."""

    url: str
    engine: str
    detected_by: tuple
    models: tuple
    version: str | None = None
    speculative: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class RequestRecord:
    """One request of the workload, as sent and as answered."""

    index: int
    prompt: str
    status: str
    attempts: int
    seconds: float | None = None
    ttft: float | None = None
    completion_tokens: int | None = None
    drafts: int | None = None
    draft_tokens: int | None = None
    accepted: int | None = None
    accepted_per_position: tuple | None = None
    counts_from: str | None = None
    error: str | None = None
    usage: dict | None = field(default=None, repr=False)
    timings: dict | None = field(default=None, repr=False)

    @property
    def acceptance_length(self):
        return 1 + self.accepted / self.drafts if self.drafts else None

    def to_record(self, engine, k):
        return {"schema": SCHEMA, "request": self.index, "prompt": self.prompt,
                "engine": engine, "k": k, "status": self.status, "attempts": self.attempts,
                "counts_from": self.counts_from, "drafts": self.drafts,
                "draft_tokens": self.draft_tokens, "accepted": self.accepted,
                "accepted_per_position": (None if self.accepted_per_position is None
                                          else list(self.accepted_per_position)),
                "completion_tokens": self.completion_tokens, "usage": self.usage,
                "timings": self.timings, "seconds": self.seconds, "ttft": self.ttft,
                "error": self.error}


@dataclass(frozen=True)
class CellResult:
    """One measured cell: its window, its requests and the files written."""

    thinking: str
    k: int
    drafts: int
    draft_tokens: int | None
    accepted: int
    accepted_per_position: tuple | None
    requests: tuple = field(repr=False)
    files: tuple = ()
    per_request: bool = False
    wall_seconds: float = 0.0
    warnings: tuple = ()

    @property
    def acceptance_length(self):
        """AL of the whole window: 1 + accepted / steps."""
        return 1 + self.accepted / self.drafts

    @property
    def failed(self):
        return sum(r.status != "ok" for r in self.requests)

    def __repr__(self):
        return (f"<CellResult thinking {self.thinking}, K={self.k}: AL "
                f"{self.acceptance_length:.4f} ({self.accepted} accepted / {self.drafts} "
                f"steps), {len(self.requests)} requests, {self.failed} failed>")


@dataclass(frozen=True)
class MeasureResult:
    """What :func:`measure` did: the server, the cells measured, the run directory."""

    path: str
    server: ServerInfo
    cells: tuple
    warnings: tuple = ()

    def __repr__(self):
        cells = ", ".join(f"{c.thinking}/K={c.k}: AL {c.acceptance_length:.4f}"
                          for c in self.cells)
        return f"<MeasureResult {self.path} ({self.server.engine}): {cells}>"

    @property
    def run(self):
        return load_run(self.path)

    def summary(self):
        """One row per cell: thinking, k, AL, steps, accepted, requests, failed."""
        import pandas as pd

        return pd.DataFrame([{"thinking": c.thinking, "k": c.k,
                              "acceptance_length": c.acceptance_length, "drafts": c.drafts,
                              "accepted": c.accepted, "requests": len(c.requests),
                              "failed": c.failed, "per_request": c.per_request,
                              "wall_seconds": c.wall_seconds} for c in self.cells])

    def to_frame(self):
        """One row per request with its cell's thinking mode and K."""
        import pandas as pd

        rows = []
        for c in self.cells:
            for r in c.requests:
                timings = r.timings or {}
                rows.append({"thinking": c.thinking, "k": c.k, "request": r.index,
                             "prompt": r.prompt, "status": r.status, "attempts": r.attempts,
                             "drafts": r.drafts, "accepted": r.accepted,
                             "acceptance_length": r.acceptance_length,
                             "completion_tokens": r.completion_tokens,
                             _TIMED_DRAFTS: timings.get(_TIMED_DRAFTS),
                             _TIMED_ACCEPTED: timings.get(_TIMED_ACCEPTED),
                             "seconds": r.seconds, "ttft": r.ttft, "error": r.error})
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class Prompt:
    """One workload item: an id and the chat messages sent."""

    id: str
    messages: tuple

    def payload(self):
        return [dict(m) for m in self.messages]


def load_prompts(path):
    """Prompts from JSON lines (``prompt`` or ``messages``, optional ``id``; ``#`` skipped)."""
    path = os.fspath(path)
    try:
        lines = read_regular(path).decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise ParseError("not UTF-8 text", path=path) from None
    out, seen = [], {}
    for number, text in enumerate(lines, 1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(f"not valid JSON: {exc.msg}", path=path, line=number) from None
        if not isinstance(doc, dict):
            raise ParseError("expected an object with \"prompt\" or \"messages\"", path=path,
                             line=number)
        pid = doc.get("id", f"line-{number}")
        if not isinstance(pid, (str, int)) or isinstance(pid, bool):
            raise ParseError(f"\"id\" must be a string, got {pid!r}", path=path, line=number)
        pid = str(pid)
        if pid in seen:
            raise ParseError(f"id {pid!r} repeats line {seen[pid]}", path=path, line=number)
        seen[pid] = number
        if "messages" in doc:
            messages = doc["messages"]
            if not isinstance(messages, list) or not messages or not all(
                    isinstance(m, dict) and isinstance(m.get("role"), str)
                    and isinstance(m.get("content"), str) for m in messages):
                raise ParseError("\"messages\" must be a non-empty list of {role, content} "
                                 "strings", path=path, line=number)
            messages = tuple(tuple(sorted(m.items())) for m in messages)
        elif isinstance(doc.get("prompt"), str) and doc["prompt"]:
            messages = ((("content", doc["prompt"]), ("role", "user")),)
        else:
            raise ParseError("expected a non-empty \"prompt\" string or a \"messages\" list",
                             path=path, line=number)
        out.append(Prompt(pid, messages))
    if not out:
        raise ParseError("no prompts in the file", path=path)
    return tuple(out)


def load_speedbench(category="coding"):
    """SPEED-Bench Qualitative first turns of one category, via the optional ``datasets``."""
    try:
        from datasets import load_dataset
    except ImportError:
        raise UsageError("SPEED-Bench needs the `datasets` package: pip install "
                         "'goldenal[speedbench]', or pass --prompts FILE") from None
    rows = load_dataset("nvidia/SPEED-Bench", "qualitative", split="test")
    out = []
    for row in rows:
        if row.get("category") != category or not row.get("turns"):
            continue
        out.append(Prompt(str(row.get("question_id", len(out))),
                          ((("content", str(row["turns"][0])), ("role", "user")),)))
    if not out:
        raise UsageError(f"SPEED-Bench Qualitative has no {category!r} prompts")
    return tuple(out)


def _digest(prompts):
    h = hashlib.sha256()
    for p in prompts:
        h.update(json.dumps([p.id, p.payload()], sort_keys=True).encode())
    return "sha256:" + h.hexdigest()


# What a server may send, at most (docs/cli.md, measure); past a cap the run stops
# (ResponseLimit, exit 2) and nothing is written.
MAX_METRICS_BYTES = 64 << 20     # one /metrics body
MAX_JSON_BYTES = 16 << 20        # one JSON answer (models, info, completion, error body)
MAX_SSE_LINE_BYTES = 1 << 20     # one line of a streamed completion
MAX_STREAM_BYTES = 64 << 20      # one streamed completion, every line together
MAX_JSON_DEPTH = 64              # nesting of any JSON document (objects and arrays)
MAX_SPEC_SERIES = 20_000         # speculative samples in one /metrics (vLLM DP 128, K=16: ~5,000)
# seconds for one GET (detection, each scrape): headers and the whole body, however
# slowly they drip; --timeout when shorter.  A request has --timeout seconds in all.
GET_DEADLINE = 30.0


class ResponseLimit(ServerError):
    """A server's answer passed one of measure's caps: bytes, seconds or JSON nesting."""


def _check_metrics(text, what):
    """Refuse a /metrics body with more than MAX_SPEC_SERIES speculative samples."""
    mentions = spec_mentions(text)
    if mentions > MAX_SPEC_SERIES:
        raise ResponseLimit(f"{what}: {mentions} speculative-decoding samples, past the cap "
                            f"of {MAX_SPEC_SERIES}")
    return text


def _public_url(url):
    """``url`` without what must never be written: user and password, query, fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return re.sub(r"//[^/@]*@", "//", url.split("?", 1)[0].split("#", 1)[0])
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{port}" if port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _scrub(text, url, params=()):
    """``text`` with the secrets of ``url`` and the query ``params`` values blanked."""
    try:
        parts = urlsplit(url)
        secrets = [parts.username, parts.password, parts.query, parts.fragment,
                   parts.netloc.rpartition("@")[0], *(value for _, value in params)]
    except ValueError:
        return text
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _scrub_for(client, text):
    return _scrub(text, str(client.base_url), client.params.multi_items())


def _check_encoding(response, what):
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        # asked for identity: a compressed body could expand past every cap at once
        raise ResponseLimit(f"{what}: the answer is compressed (Content-Encoding "
                            f"{encoding[:40]!r}), though measure asks for identity")


async def _read_capped(response, cap, what):
    """The body of ``response``, refused past ``cap`` bytes."""
    _check_encoding(response, what)
    declared = response.headers.get("content-length", "").strip()
    if declared.isascii() and declared.isdigit() and int(declared) > cap:
        raise ResponseLimit(f"{what}: the answer is {declared} bytes, past the cap of "
                            f"{size_text(cap)}")
    chunks, size = [], 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > cap:
            raise ResponseLimit(f"{what}: the answer is longer than the cap of {size_text(cap)}")
        chunks.append(chunk)
    return b"".join(chunks)


async def _get(client, url, path, *, cap=MAX_JSON_BYTES, deadline=GET_DEADLINE):
    """(status, body) of a GET, or (None, reason); bounded by ``cap`` bytes and ``deadline``
    seconds in all (httpx bounds each read only: a drip would never trip it)."""
    import httpx

    async def get():
        async with client.stream("GET", path) as r:
            return r.status_code, (await _read_capped(r, cap, f"{url}{path}")).decode(
                "utf-8", "replace")

    try:
        return await asyncio.wait_for(get(), deadline)
    except asyncio.TimeoutError:
        raise ResponseLimit(f"{url}{path}: no whole answer within {deadline:g} s (the "
                            "deadline of one GET)") from None
    except httpx.HTTPError as exc:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return None, _scrub_for(client, text)


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _json_depth(text):
    """How deep ``text`` nests, linear and without recursion (``json.loads`` recurses)."""
    import itertools

    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def _json(text, what=None):
    """The JSON value of ``text``, or None; too deep: ResponseLimit naming ``what``, else None."""
    if not isinstance(text, str):
        return None
    if _json_depth(text) > MAX_JSON_DEPTH:
        if what is None:
            return None
        raise ResponseLimit(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels (the "
                            "cap)")
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None


async def _detect(client, url, engine, deadline=GET_DEADLINE):
    status, body = await _get(client, url, "/v1/models", deadline=deadline)
    if status is None:
        raise ServerError(f"cannot reach {url}: {body}")
    models_doc = _json(body, f"{url}/v1/models") if status == 200 else None
    if not isinstance(models_doc, dict):
        raise ServerError(f"{url}/v1/models answered HTTP {status}: not an OpenAI-compatible "
                          "server")
    data = models_doc.get("data") if isinstance(models_doc.get("data"), list) else []
    models = tuple(str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id"))
    owned_by = {rec.server_owner: name for name, rec in records().items()}
    owners = {owned_by.get(str(m.get("owned_by", "")).lower()) for m in data
              if isinstance(m, dict)} - {None}
    status, metrics = await _get(client, url, "/metrics", cap=MAX_METRICS_BYTES,
                                 deadline=deadline)
    if status != 200:
        raise ServerError(f"{url}/metrics answered {status or metrics}: measure reads the "
                          "server's counters (llama-server needs --metrics)")
    _check_metrics(metrics, f"{url}/metrics")
    prefixes = [name for name, rec in records().items() if rec.metrics and re.search(
        "^" + re.escape(re.match(r"[^:_]*[:_]", next(iter(rec.metrics.values()))).group()),
        metrics, re.M)]
    evidence = [f"metrics prefix {p}" for p in prefixes]
    evidence += [f"/v1/models owned_by {o}" for o in sorted(owners)]
    found = prefixes[0] if prefixes else (sorted(owners)[0] if len(owners) == 1 else None)
    if engine == "auto":
        if found is None:
            raise ServerError(f"cannot tell the engine at {url}: no known /metrics prefix "
                              "and no known owned_by; pass --engine")
        engine = found
    elif found is not None and found != engine:
        if engine not in prefixes and engine not in owners:
            # nothing the server says supports the engine given: a run recorded under the
            # wrong engine would be read (and verified) with that engine's semantics
            raise UsageError(f"--engine {engine}, but nothing at {url} says {engine}: it "
                             f"looks like {found} ({', '.join(evidence)}); pass --engine "
                             f"{found} or --engine auto")
        evidence.append(f"--engine {engine} given; the server looks like {found}")
    info = {"v1/models": models_doc}
    version, spec = None, {}
    rec = record(engine)
    for path in rec.info_endpoints:
        status, body = await _get(client, url, path, deadline=deadline)
        doc = _json(body, f"{url}{path}") if status == 200 else None
        if not isinstance(doc, dict):
            continue
        info[path.lstrip("/")] = doc
        version, spec = doc.get(rec.version_key) if rec.version_key else None, _facts(rec, doc)
        evidence.append(path)
        break
    if rec.slots_endpoint:
        # one object per slot (unless the server hides them), with its speculative flag
        path = rec.slots_endpoint
        status, body = await _get(client, url, path, deadline=deadline)
        slots = _json(body, f"{url}{path}") if status == 200 else None
        if isinstance(slots, list) and slots and all(isinstance(s, dict) for s in slots):
            info[path.lstrip("/")] = slots
            spec.update(_slot_facts(rec, slots))
            evidence.append(path)
    return ServerInfo(url, engine, tuple(evidence), models, version, spec, info), metrics


def _facts(rec, doc):
    """The record's ``info_keys`` (a key or a path of keys) an info endpoint reports."""
    spec = {}
    for path in rec.info_keys:
        value = doc
        for key in (path,) if isinstance(path, str) else path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            spec[path if isinstance(path, str) else path[-1]] = value
    return spec


def _slot_facts(rec, slots):
    """Each slot's speculative flag and the ``<flag>.*`` parameters a busy slot reports."""
    flag, params_key = rec.slot_fields
    out = {}
    flags = [s.get(flag) for s in slots]
    if all(isinstance(f, bool) for f in flags):
        out[f"slots_{flag}"] = flags
    for s in slots:
        params = s.get(params_key) if isinstance(s.get(params_key), dict) else {}
        for key in params:
            if str(key).startswith(f"{flag}.") and f"slots.{key}" not in out:
                out[f"slots.{key}"] = params[key]
    return out


# HTTP statuses a second try can pass, besides every 5xx.  Any other 4xx (400 a prompt
# past the context, 401/403 the API key, 404 path or model, 422 the body) repeats on
# every try and is recorded as failed at once.
_RETRYABLE_STATUS = frozenset({408, 425, 429})
# the longest Retry-After a retry waits for; a server asking for longer is recorded as
# failed at once (the cell would stall), as is one answering 4xx
RETRY_AFTER_CAP = 60.0
# how much of a server's error message a request record keeps
_ERROR_CHARS = 300


class _Failed(Exception):
    """A request that did not complete, ``retryable`` or not, maybe with a Retry-After."""

    def __init__(self, message, *, retryable=True, retry_after=None):
        super().__init__(message)
        self.retryable, self.retry_after = retryable, retry_after


def _retryable_status(status):
    return status in _RETRYABLE_STATUS or 500 <= status <= 599


def _retry_after(value):
    """Seconds from a Retry-After header (delta-seconds or an HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


def _server_message(text):
    """The server's message from an error body, whitespace folded, bounded."""
    doc = _json(text)
    message = None
    if isinstance(doc, dict):
        error = doc.get("error")
        if isinstance(error, dict):
            message = error.get("message")
        elif isinstance(error, str):
            message = error
        if message is None:
            message = doc.get("message", doc.get("detail"))
    if message is None or not isinstance(message, str):
        message = text if message is None else json.dumps(message)
    message = " ".join(str(message).split())
    return message if len(message) <= _ERROR_CHARS else message[:_ERROR_CHARS - 1] + "…"


def _http_failure(status, text, headers):
    """The _Failed for a non-200 answer, honouring a Retry-After up to RETRY_AFTER_CAP."""
    message = f"HTTP {status}: {_server_message(text)}"
    if not _retryable_status(status):
        return _Failed(message, retryable=False)
    wait = _retry_after(headers.get("retry-after"))
    if wait is not None and wait > RETRY_AFTER_CAP:
        return _Failed(f"{message} (Retry-After {wait:g} s is past the "
                       f"{RETRY_AFTER_CAP:g} s cap)", retryable=False)
    return _Failed(message, retry_after=wait)


async def _sse_lines(response, what):
    """The lines of a stream, bounded each and together (httpx's ``aiter_lines`` is not)."""
    _check_encoding(response, what)

    def too_long():
        return ResponseLimit(f"{what}: a line of the stream is longer than the cap of "
                             f"{size_text(MAX_SSE_LINE_BYTES)}")

    held, size = bytearray(), 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > MAX_STREAM_BYTES:
            raise ResponseLimit(f"{what}: the stream is longer than the cap of "
                                f"{size_text(MAX_STREAM_BYTES)}")
        held += chunk
        if b"\n" in chunk:  # split only then: each byte is scanned once
            *lines, rest = held.split(b"\n")
            held = bytearray(rest)
            for line in lines:
                if len(line) > MAX_SSE_LINE_BYTES:
                    raise too_long()
                yield line.rstrip(b"\r").decode("utf-8", "replace")
        if len(held) > MAX_SSE_LINE_BYTES:
            raise too_long()
    if held:
        yield held.rstrip(b"\r").decode("utf-8", "replace")


async def _stream_once(client, body, timeout, url=""):
    """Send one streaming chat completion; what the stream said, or raise _Failed (httpx's
    errors are :func:`_send`'s)."""
    what = f"{url}/v1/chat/completions"
    t0 = time.perf_counter()
    ttft = None
    usage = timings = spec = meta = None
    finished = done = False
    async with client.stream("POST", "/v1/chat/completions", json=body,
                             timeout=timeout) as r:
        if r.status_code != 200:
            text = (await _read_capped(r, MAX_JSON_BYTES, what)).decode("utf-8", "replace")
            raise _http_failure(r.status_code, text, r.headers)
        async for line in _sse_lines(r, what):
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            chunk = _json(data, f"{what} (an event of the stream)")
            if not isinstance(chunk, dict):
                raise _Failed(f"not a JSON event: {data[:80]!r}")
            if "error" in chunk:
                raise _stream_error(chunk["error"])
            choices = chunk.get("choices")
            for choice in choices if isinstance(choices, list) else ():
                if not isinstance(choice, dict):
                    continue
                delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
                if ttft is None and (delta.get("content") or delta.get("reasoning_content")):
                    ttft = time.perf_counter() - t0
                if choice.get("finish_reason"):
                    finished = True
            if chunk.get("usage") and isinstance(chunk["usage"], dict):
                usage = chunk["usage"]
            if chunk.get(_TIMINGS) and isinstance(chunk[_TIMINGS], dict):
                timings = chunk[_TIMINGS]
            meta = spec_details(chunk) or meta
            spec = request_metrics(chunk) or spec
    if not (done or finished):
        raise _Failed("the stream ended before the completion finished")
    return {"seconds": time.perf_counter() - t0, "ttft": ttft, "usage": usage,
            "timings": timings, "spec": spec, "meta": meta}


def _stream_error(error):
    """The _Failed for an error event in a stream; a 4xx ``code`` is not retried."""
    code = error.get("code") if isinstance(error, dict) else None
    message = f"server error: {_server_message(json.dumps({'error': error}))}"
    if _is_int(code) and 400 <= code <= 499 and not _retryable_status(code):
        return _Failed(f"{message} (code {code})", retryable=False)
    return _Failed(message)


async def _retrying(call, retries, retry_delay):
    """``(result, None, attempts)`` or ``(None, last _Failed, attempts)``; retries wait
    ``retry_delay`` doubling (or the server's Retry-After when longer)."""
    for attempt in range(retries + 1):
        try:
            return await call(), None, attempt + 1
        except _Failed as exc:
            if not exc.retryable or attempt == retries:
                return None, exc, attempt + 1
            await asyncio.sleep(max(retry_delay * 2 ** attempt, exc.retry_after or 0))


async def _send(client, body, timeout, url=""):
    """One request as sent, bounded by ``timeout`` seconds in all (a stream that keeps
    sending never trips httpx's per-read timeout); every failure a _Failed."""
    import httpx

    call = _stream_once if body["stream"] else _complete_once
    try:
        return await asyncio.wait_for(call(client, body, timeout, url), timeout)
    except (asyncio.TimeoutError, httpx.TimeoutException):
        raise _Failed(f"timed out after {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise _Failed(_scrub_for(client, f"{type(exc).__name__}: {exc}")) from None


def _transport(rec):
    """The request fields of the record's ``transport`` (SGLang: docs/engines.md §2.7)."""
    if rec.transport == "complete":
        return {"stream": False, **rec.request_fields}
    return {"stream": True, "stream_options": {"include_usage": True}, **rec.request_fields}


async def _complete_once(client, body, timeout, url=""):
    """Send one non-streaming chat completion; what it said, or raise _Failed."""
    what = f"{url}/v1/chat/completions"
    t0 = time.perf_counter()
    async with client.stream("POST", "/v1/chat/completions", json=body,
                             timeout=timeout) as r:
        status, headers = r.status_code, r.headers
        text = (await _read_capped(r, MAX_JSON_BYTES, what)).decode("utf-8", "replace")
    if status != 200:
        raise _http_failure(status, text, headers)
    doc = _json(text, what)
    choices = doc.get("choices") if isinstance(doc, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Failed(f"not a chat completion: {text[:80]!r}")
    if not choices[0].get("finish_reason"):
        raise _Failed("the completion did not finish")
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else None
    return {"seconds": time.perf_counter() - t0, "ttft": None, "usage": usage,
            "timings": None, "spec": None, "meta": spec_details(doc)}


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


# counts are 64-bit on every engine; a count past this is no count
COUNT_MAX = 2 ** 63 - 1


def _impossible_counts(steps, draft_tokens, accepted, per_pos, k):
    """Why counts cannot be K-drafting counts (range, order, sums), or None."""
    named = [("steps", steps), ("accepted", accepted)]
    if draft_tokens is not None:
        named.append(("draft tokens", draft_tokens))
    named += [(f"accepted at position {i}", v) for i, v in enumerate(per_pos or ())]
    for name, value in named:
        if not _is_int(value):
            return f"{name} is {str(value)[:40]!r}, not an integer"
        if not 0 <= value <= COUNT_MAX:
            shown = value if value.bit_length() < 128 else f"about 2^{value.bit_length() - 1}"
            return f"{name} {shown} is outside 0..2^63-1"
    if accepted > k * steps:
        return f"{accepted} accepted in {steps} steps is more than K={k} per step"
    if draft_tokens is not None and draft_tokens > k * steps:
        return f"{draft_tokens} draft tokens in {steps} steps is more than K={k} per step"
    if draft_tokens is not None and accepted > draft_tokens:
        return f"{accepted} accepted of {draft_tokens} draft tokens"
    if per_pos is not None:
        if per_pos and per_pos[0] > steps:
            return f"{per_pos[0]} accepted at position 0 in {steps} steps"
        if any(a < b for a, b in zip(per_pos, per_pos[1:])):
            return f"per-position counts {list(per_pos)} increase"
        if sum(per_pos) != accepted:
            return f"per-position counts sum to {sum(per_pos)}, not {accepted} accepted"
    return None


def _delta(before, after, where):
    """The counts between two ``(Scrape, text)`` scrapes; a restart between them stops the cell."""
    a, b = _PROCESS_START.search(before[1] or ""), _PROCESS_START.search(after[1] or "")
    if a and b and a.group(1) != b.group(1):
        raise CounterReset(f"the server restarted during {where} (process_start_time_seconds "
                           f"{a.group(1)} -> {b.group(1)}); this window cannot be measured")
    try:
        observations, _ = counter_window(before[0], after[0])
    except CounterReset as exc:
        raise CounterReset(f"{where}: {exc.message}; nothing written for this cell") from None
    except RoundedCounters as exc:
        raise MeasureError(f"{where}: {exc.message}; nothing written for this cell") from None
    counted = [o for o in observations if not o.mean_only]
    if not counted:
        return 0, 0, 0, None, None
    o = counted[0]
    return o.drafts, o.draft_tokens, o.accepted, o.accepted_per_position, o.k


async def _run_cell(client, server, prompts, *, k, thinking, body_extra, concurrency,
                    retries, retry_delay, timeout, progress):
    where = f"thinking {thinking}, K={k}"
    scrapes = 0

    async def scrape():
        """``/metrics`` now, retried as requests are (a restart then shows)."""
        nonlocal scrapes

        async def get():
            status, text = await _get(client, server.url, "/metrics", cap=MAX_METRICS_BYTES,
                                      deadline=min(timeout, GET_DEADLINE))
            if status != 200:
                raise _Failed(f"{status or text}")
            return _check_metrics(text, f"{server.url}/metrics")

        text, error, _ = await _retrying(get, retries, retry_delay)
        if error is not None:
            raise ServerError(f"{server.url}/metrics answered {error} during {where} "
                              f"({retries + 1} attempts): the server went away; nothing "
                              "written for this cell")
        scrapes += 1
        return Scrape(f"{server.url}/metrics ({where} scrape {scrapes})", text), text

    first = await scrape()
    records = [None] * len(prompts)
    state = {"prev": first}
    scrape_lock = asyncio.Lock()
    bar = _progress_bar(len(prompts), f"{where}", progress)
    pending = iter(range(len(prompts)))
    t0 = time.perf_counter()

    title = record(server.engine).title

    async def one(i):
        prompt = prompts[i]
        body = {"model": server.models[0] if server.models else "default",
                "messages": prompt.payload(), **_transport(record(server.engine)),
                **body_extra}
        if "seed" in body:
            body["seed"] += i
        got, error, attempts = await _retrying(lambda: _send(client, body, timeout, server.url),
                                               retries, retry_delay)
        counts = counts_from = None  # counts_from names where counts came from
        if got is not None and got["spec"] is not None:
            counts, counts_from = request_counts(got["spec"]), "engine per-request metrics"
        elif got is not None and got.get("meta") is not None:
            try:
                counts = meta_counts(got["meta"], k)
                counts = None if counts is None else tuple(counts[:4])
            except InconsistentCounts as exc:
                raise MeasureError(f"{where}, request {i} ({prompt.id}): {title}'s counts "
                                   f"contradict each other: {exc}; nothing written for this "
                                   "cell") from None
            counts_from = f"{title} per-request {META_KEY}"
        # a scrape after every request: a restart shows as a counter going down even when
        # later traffic would carry the counters past their old values by the end
        async with scrape_lock:
            after = await scrape()
            d = _delta(state["prev"], after, f"{where}, after request {i} ({prompt.id})")
            state["prev"] = after
            if d[4] is not None and d[4] != k:
                # the per-position counters name the server's K from the first request on
                raise MeasureError(f"{where}: the server drafted {d[4]} positions per step "
                                   f"(its per-position counters after request {i}, "
                                   f"{prompt.id}), not K={k}; nothing written")
        if concurrency == 1 and counts is None:
            counts, counts_from = d[:4], "counter deltas around the request (concurrency 1)"
        if counts is not None and counts[3] is not None and len(counts[3]) != k:
            raise MeasureError(f"{where}: the server drafted {len(counts[3])} positions per "
                               f"step (request {i}'s per-position counts), not K={k}; "
                               "nothing written")
        impossible = _impossible_counts(*counts, k) if counts is not None else None
        if impossible:
            raise MeasureError(f"{where}, request {i} ({prompt.id}): impossible counts from "
                               f"{counts_from}: {impossible}; nothing written for this cell")
        got = got or {}  # empty: the request failed
        usage = got.get("usage")
        records[i] = RequestRecord(
            i, prompt.id, "ok" if got else "failed", attempts, got.get("seconds"),
            got.get("ttft"), usage.get("completion_tokens") if isinstance(usage, dict) else None,
            *(counts or (None,) * 4), counts_from if counts else None,
            None if got else _failure_text(error, attempts), usage, got.get("timings"))
        bar.update(1)

    async def worker():
        # a worker stops with its request's error: no other request is started after it
        for i in pending:
            await one(i)

    try:
        workers = [asyncio.ensure_future(worker()) for _ in range(max(1, concurrency))]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for w in workers:
                w.cancel()
            raise
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    last = state["prev"]
    return records, (first[1], last[1]), _delta(first, last, where), wall


# how a request record's error starts when the failure was not retried
_NOT_RETRIED = "failed, not retried"


def _failure_text(error, attempts):
    if not error.retryable:
        return f"{_NOT_RETRIED} (a retry fails the same way): {error}"
    return f"failed after {attempts} attempt(s): {error}"


def _progress_bar(total, desc, progress):
    from tqdm import tqdm

    if progress is None:
        progress = sys.stderr.isatty()
    try:
        columns, lines = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        columns = lines = 0
    # a terminal of no size (a pty nobody sized: script, docker -t) would show no bar at all
    return tqdm(total=total, desc=desc, unit="req", disable=not progress, file=sys.stderr,
                leave=False, ncols=columns or 80, nrows=lines or 24)


def _load_manifest(path):
    file, doc, _ = read_manifest(path)
    if not isinstance(doc.get("cells"), list):
        raise ParseError("run.yaml must be a mapping with a `cells` list", path=file)
    return doc


def _dump(doc):
    return manifest_text(doc, header=(
        "# Measured by `goldenal measure` against a live server; one cell per "
        "(thinking, k).\n# Per-request records: requests_*.jsonl; scrapes: metrics_*.prom.\n"))


def _check_existing(out, identity, workload, cells, replace):
    doc = _load_manifest(out)
    for key in ("model", "draft", "method"):
        if key in identity and key in doc and doc[key] != identity[key]:
            raise UsageError(f"{out}/run.yaml has {key} {doc[key]!r}, this measurement "
                             f"{identity[key]!r}: measure into another run directory")
    engine = (doc.get("engine") or {}).get("name") if isinstance(doc.get("engine"), dict) \
        else doc.get("engine")
    if engine and engine != identity["engine"]["name"]:
        raise UsageError(f"{out}/run.yaml was measured on {engine}, this server is "
                         f"{identity['engine']['name']}")
    old = (doc.get("measure") or {}).get("workload", {}).get("digest")
    if old and old != workload["digest"]:
        raise UsageError(f"{out}/run.yaml was measured with another prompt set ({old}); every "
                         "K must see the same prompts in the same order (paired design)")
    have = {(str(c.get("thinking")), c.get("k")) for c in doc["cells"] if isinstance(c, dict)}
    for key in cells:
        if key in have and not replace:
            raise ConflictError(f"{out}/run.yaml already has the cell thinking {key[0]}, "
                                f"K={key[1]}; pass --replace to measure it again")
    return doc


def _with_not_golden(doc, reason):
    """``doc`` marked ``not_golden: reason`` (placed after ``simulated``, as a new run has it)."""
    if doc.get("not_golden") == reason:
        return doc
    out = {}
    for key, value in doc.items():
        if key != "not_golden":
            out[key] = value
        if key == "simulated":
            out["not_golden"] = reason
    out.setdefault("not_golden", reason)
    return out


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _commit(out, doc, cell_entry, files, *, identity, workload, replace):
    """Add one cell to ``out`` atomically under its lock, keeping cells added meanwhile."""
    key = (cell_entry["thinking"], cell_entry["k"])
    manifest = os.path.join(out, "run.yaml")
    while True:
        fresh = not os.path.exists(manifest)
        where = os.path.dirname(os.path.abspath(out)) if fresh else out
        if fresh:
            os.makedirs(where, exist_ok=True)
        try:
            with locked_directory(where):
                if fresh != (not os.path.exists(manifest)):
                    continue        # created (or removed) before the lock was ours: again
                if not fresh:
                    current = _check_existing(out, identity, workload, [key], replace)
                    name = f"thinking_{key[0]}"
                    doc = {**current, "sampling": {**(current.get("sampling") or {}),
                                                   name: doc["sampling"][name]}}
                    if "not_golden" in identity:
                        doc = _with_not_golden(doc, identity["not_golden"])
                return _write_cell(out, doc, cell_entry, files, fresh)
        except OSError as exc:
            if exc.errno == errno.EWOULDBLOCK:
                raise ConflictError(f"{exc.strerror}; nothing written for the cell thinking "
                                    f"{key[0]}, K={key[1]}", path=out) from None
            raise


def _write_cell(out, doc, cell_entry, files, fresh):
    key = (cell_entry["thinking"], cell_entry["k"])
    cells = [c for c in doc["cells"] if not isinstance(c, dict)
             or (str(c.get("thinking")), c.get("k")) != key]
    cells.append(cell_entry)
    cells.sort(key=lambda c: (str(c.get("thinking")), c.get("k", 0)) if isinstance(c, dict)
               else ("", 0))
    doc = {**doc, "cells": cells}
    if not fresh:
        # the cell's files and run.yaml listing them, all or nothing
        write_texts_atomic({**{os.path.join(out, name): text for name, text in files.items()},
                            os.path.join(out, "run.yaml"): _dump(doc)})
        return doc
    # a new run appears whole: filled privately, then renamed into place
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.measure-",
                           dir=os.path.dirname(os.path.abspath(out)))
    try:
        # mkdtemp's directory is private (0700); the run is made as mkdir would make it
        # (an empty --out keeps its own mode)
        os.chmod(tmp, os.stat(out).st_mode & 0o7777 if os.path.isdir(out)
                 else 0o777 & ~_umask())
        for name, text in {**files, "run.yaml": _dump(doc)}.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        if os.path.isdir(out):
            os.rmdir(out)  # empty (checked up front); rename needs it gone or empty
        os.rename(tmp, out)
        tmp = None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return doc


def _measure_iv(url, out, model, k, thinking, concurrency, max_tokens, requests, engine,
                retries, timeout, not_golden, seed):
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        raise UsageError("`url` must be an http(s):// URL, got "
                         f"{_public_url(url) if isinstance(url, str) else url!r}")
    try:
        urlsplit(url.replace("{k}", "1")).port
    except ValueError as exc:
        raise UsageError(f"`url` {_public_url(url)!r} is not a valid URL: {exc}") from None
    if not out:
        raise UsageError("`out` (the run directory) is required")
    if not isinstance(model, str) or not model.strip():
        raise UsageError("`model` (the model key, as in the golden curves) is required")
    ks = [k] if isinstance(k, int) else list(k)
    if not ks or any(not _is_int(x) or x < 1 for x in ks):
        raise UsageError(f"`k` must be a positive integer or a list of them, got {k!r}")
    if len(set(ks)) != len(ks):
        raise UsageError(f"`k` repeats a value: {ks}")
    thinking = {True: "on", False: "off"}.get(thinking, thinking)
    if thinking not in ("on", "off"):
        raise UsageError(f"`thinking` must be 'on' or 'off', got {thinking!r}")
    for name, value in (("concurrency", concurrency), ("max_tokens", max_tokens),
                        ("requests", 1 if requests is None else requests)):
        if not _is_int(value) or value < 1:
            raise UsageError(f"`{name}` must be a positive integer, got {value!r}")
    if not _is_int(retries) or retries < 0:
        raise UsageError(f"`retries` must be a non-negative integer, got {retries!r}")
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise UsageError(f"`timeout` must be positive seconds, got {timeout!r}")
    if not_golden is not None and (not isinstance(not_golden, str) or not not_golden.strip()):
        raise UsageError("`not_golden` must be the reason the run is no golden material "
                         f"(a non-empty string), got {not_golden!r}")
    if seed is not None and not _is_int(seed):
        raise UsageError(f"`seed` must be an integer, got {seed!r}")
    if engine not in ("auto",) + ENGINES:
        raise UsageError(f"`engine` must be auto or one of {', '.join(ENGINES)}, got {engine!r}")
    if len(ks) > 1 and "{k}" not in url:
        raise UsageError("a server runs one K: to measure several K in one call, give a URL "
                         "with {k} (one server per K, e.g. http://127.0.0.1:80{k}0), or run "
                         "one measure per K into the same run directory")
    out = os.fspath(out)
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise UsageError("--out names a file, not a run directory", path=out)
        if not os.path.isfile(os.path.join(out, "run.yaml")) and os.listdir(out):
            raise UsageError("--out is a non-empty directory without run.yaml: not a run "
                             "directory measure can add to", path=out)
    else:
        # missing parents are made when the run is written (mkdir -p): check now that they
        # can be, so that no measurement is lost at the end
        ancestor = os.path.dirname(os.path.abspath(out))
        while not os.path.exists(ancestor):
            ancestor = os.path.dirname(ancestor)
        if not os.path.isdir(ancestor) or not os.access(ancestor, os.W_OK | os.X_OK):
            raise UsageError(f"cannot create --out: {ancestor} is not a writable directory",
                             path=out)
    return ks, thinking, out


def _identity_iv(out, model, draft, method, curve, ks, thinking):
    """Refuse up front an identity that would not read back from a curve file unchanged."""
    from goldenal.golden.curvefile import (MANIFEST_NAME, check_curve_id, load_directory,
                                    manifest_entry, render_curve, render_manifest)
    from goldenal.golden.curves import Curve

    if curve is not None:
        check_curve_id(curve)
    try:
        ident = normalize_identity({"model": model, "draft": draft or [],
                                    **({"method": method} if method is not None else {})})
    except ParseError as exc:
        raise UsageError(exc.message) from None
    run = os.path.basename(os.path.abspath(out))
    probe_id = curve or "measured"
    given = {"model": model, "draft": tuple(ident["draft"]), "method": method, "run": run}
    with tempfile.TemporaryDirectory() as empty:
        for name, value in given.items():
            probe = Curve(probe_id, model if name != "model" else value,
                          {thinking: {k: "2.00" for k in ks}},
                          method=method if name in ("method", "run") else None,
                          draft=given["draft"] if name in ("draft", "method", "run") else (),
                          provenance={"run": run} if name == "run" else {})
            files = {f"{probe_id}.yaml": render_curve(probe),
                     MANIFEST_NAME: render_manifest({probe_id: manifest_entry(probe)})}
            try:
                back = load_directory(empty, overlay=files)[probe_id]
                same = {"model": back.model, "draft": tuple(back.draft),
                        "method": back.method}.get(name, value) == value
            except (GoldenALError, KeyError):
                same = False
            if not same:
                flag = {"run": "--out (its last part names the run)"}.get(name, f"--{name}")
                shown = list(value) if name == "draft" else value
                raise UsageError(f"{flag} {shown!r} does not read back unchanged from a "
                                 "golden curve file, so fit --golden-dir would refuse the run; "
                                 "nothing sent")


def measure(url, *, out, model, draft=(), k, thinking, prompts=None, concurrency=1,
            max_tokens=4096, requests=None, engine="auto", method=None, curve=None,
            temperature=0.0, seed=None, ignore_eos=False, chat_template_kwargs=None,
            retries=2, retry_delay=1.0, timeout=600.0, replace=False, note=None,
            not_golden=None, progress=None):
    """Measure acceptance on a live server into a run directory.

    Parameters
    ----------
    url : str
        Base URL of the OpenAI-compatible server; with several K, ``{k}`` in it
        names one server per K.
    out : path
        Run directory: created atomically, or an existing run the cells join.
    model : str
        Model key, as in the golden curves.
    draft : str or sequence of str
        Draft head id(s); empty for native MTP.
    k : int or sequence of int
        K of the cell(s); the server's own K must agree.
    thinking : {"on", "off"} or bool
        Sent as ``chat_template_kwargs`` ``{"enable_thinking": ...}`` unless
        ``chat_template_kwargs`` is given.
    prompts : path or sequence of Prompt, optional
        A prompt file (:func:`load_prompts`); default SPEED-Bench Qualitative coding.
    concurrency : int
        Requests in flight; at 1 every request gets its own counts on any engine.
    max_tokens, requests, temperature, ignore_eos : optional
        Output cap per request; only the first ``requests`` prompts; sampling
        temperature; run every request to ``max_tokens``.
    engine : {"auto", *ENGINES}
    method, curve, note, not_golden : str, optional
        Written into ``run.yaml``; ``not_golden`` says why the run must never
        become a golden curve (``fit`` then needs ``--allow-not-golden``).
    seed : int, optional
        Request ``i`` carries ``seed + i`` (the same at every K).
    retries, retry_delay, timeout : optional
        Retries of a failure a second try can cure (no connection, a timeout,
        HTTP 408, 425, 429, 5xx; other 4xx fail at once), seconds before the
        first (doubling, or a Retry-After up to :data:`RETRY_AFTER_CAP`), and
        seconds per request.
    replace : bool
        Measure a cell the run already has again (else ConflictError).
    progress : bool, optional
        A progress bar on stderr; default only when stderr is a terminal.

    Returns
    -------
    MeasureResult

    Raises
    ------
    ServerError, ResponseLimit
        Unreachable, not OpenAI-compatible, or an answer past a cap (exit 2).
    CounterReset, MeasureError
        A restart during a cell; the server's K disagrees, every request failed,
        or the counts are impossible or contradict /metrics (the cell is then
        written marked ``inconsistent``) (exit 1).
    UsageError, ConflictError, ParseError
        Bad arguments or prompts, an identity ``fit --golden-dir`` would refuse,
        a cell that exists; nothing of the cell is written.

    Example
    -------
    >>> measure("http://127.0.0.1:8080", out="runs/tiny", model="tiny", k=3,
    ...         thinking="off", prompts="prompts.jsonl").cells[0]   # doctest: +SKIP
    <CellResult thinking off, K=3: AL 2.7000 (...)>
    """
    ks, thinking, out = _measure_iv(url, out, model, k, thinking, concurrency, max_tokens,
                                    requests, engine, retries, timeout, not_golden, seed)
    _identity_iv(out, model, draft, method, curve, ks, thinking)
    if prompts is None:
        prompt_set, source = load_speedbench(), {"name": "SPEED-Bench Qualitative",
                                                  "category": "coding"}
    elif isinstance(prompts, (str, os.PathLike)):
        prompt_set, source = load_prompts(prompts), {"name": os.path.basename(
            os.fspath(prompts))}
    else:
        prompt_set, source = tuple(prompts), {"name": "given in Python"}
    if requests is not None:
        if requests > len(prompt_set):
            raise UsageError(f"`requests` is {requests} but the prompt set has only "
                             f"{len(prompt_set)} prompts")
        prompt_set = prompt_set[:requests]
    workload = {**source, "requests": len(prompt_set), "digest": _digest(prompt_set),
                "first_ids": [p.id for p in prompt_set[:3]]}
    kwargs = chat_template_kwargs if chat_template_kwargs is not None else {
        "enable_thinking": thinking == "on"}
    body_extra = {"max_tokens": max_tokens, "temperature": temperature,
                  "chat_template_kwargs": kwargs, **({"ignore_eos": True} if ignore_eos else {}),
                  **({"seed": seed} if seed is not None else {})}
    return asyncio.run(_measure(url, out, model, draft, ks, thinking, prompt_set, workload,
                                body_extra, concurrency, engine, method, curve, retries,
                                retry_delay, timeout, replace, note, not_golden, progress))


async def _measure(url, out, model, draft, ks, thinking, prompts, workload, body_extra,
                   concurrency, engine, method, curve, retries, retry_delay, timeout,
                   replace, note, not_golden, progress):
    import httpx

    from goldenal import __version__

    cells, warnings, server = [], [], None
    for k in ks:
        # the OpenAI base URL (http://host:port/v1) names the same server; a query goes
        # with every request, and neither it nor a user:password is ever written
        parts = urlsplit(url.replace("{k}", str(k)))
        base = urlunsplit((parts.scheme, parts.netloc,
                           re.sub(r"/v1$", "", parts.path.rstrip("/")), "", ""))
        limits = httpx.Limits(max_connections=concurrency + 2)
        async with httpx.AsyncClient(base_url=base, timeout=min(timeout, 30.0),
                                     limits=limits, params=parse_qsl(parts.query),
                                     headers={"Accept-Encoding": "identity"}) as client:
            server, first_metrics = await _detect(client, _public_url(base), engine,
                                                  min(timeout, GET_DEADLINE))
            identity = normalize_identity({
                "run": os.path.basename(os.path.abspath(out)), "simulated": False,
                **({"not_golden": not_golden} if not_golden else {}), "model": model,
                **({"curve": curve} if curve else {}),
                **({"method": method} if method else {}), "draft": draft or [],
                "engine": {"name": server.engine,
                           **({"version": server.version} if server.version else {})}})
            if os.path.isfile(os.path.join(out, "run.yaml")):
                _check_existing(out, identity, workload, [(thinking, k)], replace)
            _check_server_k(server, first_metrics, k)
            records, (before, after), (drafts, tokens, accepted, per_pos, engine_k), wall = \
                await _run_cell(client, server, prompts, k=k, thinking=thinking,
                                body_extra=body_extra, concurrency=concurrency,
                                retries=retries, retry_delay=retry_delay, timeout=timeout,
                                progress=progress)
        where = f"thinking {thinking}, K={k}"
        ok = [r for r in records if r.status == "ok"]
        if not ok:
            raise MeasureError(f"{where}: every request failed ({records[0].error}); "
                               "nothing written for this cell")
        if engine_k is not None and engine_k != k:
            raise MeasureError(f"{where}: the server drafted {engine_k} positions per step "
                               f"(its per-position counters), not K={k}; nothing written")
        counted = [r for r in ok if r.drafts is not None]
        per_request = len(counted) == len(ok) and any(r.drafts for r in ok)
        window_counted = bool(drafts)
        if not drafts and per_request:
            # no counters on /metrics (SGLang): the cell is the sum of its requests
            drafts = sum(r.drafts for r in ok)
            accepted = sum(r.accepted for r in ok)
            tokens = (sum(r.draft_tokens for r in ok)
                      if all(r.draft_tokens is not None for r in ok) else None)
            per_pos = (tuple(map(sum, zip(*(r.accepted_per_position for r in ok))))
                       if all(r.accepted_per_position is not None for r in ok) else None)
        asked = ", ".join(record(server.engine).request_fields)
        if not drafts and asked:
            raise MeasureError(f"{where}: {record(server.engine).title} answered without "
                               f"per-request counts (asked with {asked}) and its /metrics has "
                               "no accepted-draft counter: speculative decoding off, or a "
                               "release without them; nothing written")
        if not drafts:
            raise MeasureError(f"{where}: the server's speculative counters did not move "
                               "(speculative decoding off, or no counters on /metrics); "
                               "nothing written")
        impossible = _impossible_counts(drafts, tokens, accepted, per_pos, k)
        if impossible:
            source = (f"{server.url}/metrics" if window_counted
                      else "the sum of the requests' counts")
            raise MeasureError(f"{where}: impossible counts from {source}: {impossible}; "
                               "nothing written for this cell")
        inconsistent = (_reconcile(records, (drafts, tokens, accepted, per_pos), k,
                                   concurrency=concurrency,
                                   max_tokens=body_extra["max_tokens"])
                        if window_counted else None)
        cell_warnings = []
        for r in ok:
            drafted = (r.timings or {}).get(_TIMED_DRAFTS)
            if r.counts_from and r.counts_from.startswith("counter deltas") \
                    and isinstance(drafted, int) and drafted != r.draft_tokens:
                cell_warnings.append(f"{where}, request {r.index} ({r.prompt}): the counters "
                                     f"moved by {r.draft_tokens} draft tokens, its timings "
                                     f"say {_TIMED_DRAFTS} {drafted}: other traffic reached "
                                     "the server")
        replayed = _replay_warning(ok, where, seeded="seed" in body_extra)
        if replayed:
            cell_warnings.append(replayed)
        failed = len(records) - len(ok)
        if failed:
            final = sum(r.error.startswith(_NOT_RETRIED) for r in records
                        if r.status != "ok")
            how = [f"{failed - final} after {retries} retries"] if failed - final else []
            how += [f"{final} not retried, as a retry would fail the same way"] if final else []
            cell_warnings.append(f"{where}: {failed} of {len(records)} requests failed "
                                 f"({'; '.join(how)}); recorded as failed")
        tag = f"{thinking}_k{k}"
        files = {f"metrics_{tag}_before.prom": before, f"metrics_{tag}_after.prom": after,
                 f"requests_{tag}.jsonl": "".join(
                     json.dumps(r.to_record(server.engine, k)) + "\n"
                     for r in records),
                 f"server_{tag}.json": json.dumps(
                     {"url": server.url, "engine": server.engine,
                      "detected_by": list(server.detected_by), "models": list(server.models),
                      "version": server.version, "speculative": server.speculative,
                      "responses": server.raw}, indent=2, default=str) + "\n"}
        listed = [f"requests_{tag}.jsonl"] if per_request else \
            [f"metrics_{tag}_before.prom", f"metrics_{tag}_after.prom"]
        entry = {"thinking": thinking, "k": k, "files": listed,
                 "requests": len(records), "failed": failed,
                 "counts": ("per request: " + ok[0].counts_from) if per_request
                 else "one window: /metrics before and after",
                 # this cell's server (one server per K) as it described itself
                 **({"speculative": server.speculative} if server.speculative else {}),
                 # the server's counts contradict each other: never a golden value
                 **({"inconsistent": inconsistent} if inconsistent else {})}
        # a new run's run.yaml; an existing one is merged with it under the run's lock
        doc = {**identity, "dataset": {key: workload[key] for key in workload
                                       if key in ("name", "category")},
               "sampling": {f"thinking_{thinking}": _sampling(body_extra)},
               "date": datetime.date.today().isoformat(),
               "source": f"goldenal measure {__version__}",
               **({"note": note} if note else {}),
               "measure": {"url": _public_url(url), "concurrency": concurrency,
                           "detected_by": list(server.detected_by),
                           "speculative": server.speculative, "workload": workload},
               "cells": []}
        _commit(out, doc, entry, files, identity=identity, workload=workload, replace=replace)
        if inconsistent:
            raise MeasureError(f"{where}: {inconsistent}; the cell is recorded as "
                               f"inconsistent in {os.path.join(out, 'run.yaml')} (fit --golden-dir "
                               "refuses it): measure it again with --replace")
        warnings.extend(cell_warnings)
        cells.append(CellResult(thinking, k, drafts, tokens, accepted, per_pos,
                                tuple(records), tuple(listed), per_request, wall,
                                tuple(cell_warnings)))
    return MeasureResult(out, server, tuple(cells), tuple(warnings))


def _reconcile(records, window, k, *, concurrency, max_tokens):
    """The first disagreement beyond counting noise between requests and /metrics, or None."""
    drafts, tokens, accepted, per_pos = window
    ok = [r for r in records if r.status == "ok"]
    checks = []
    counted = [r for r in records if r.drafts is not None]
    if ok and all(r.drafts is not None for r in ok):
        # a record counted by counter deltas covers every attempt of its request
        unreported = sum(r.attempts - (r.drafts is not None) for r in records
                         if not (r.counts_from or "").startswith("counter deltas"))
        source = f"its per-request counts ({ok[0].counts_from})"
        checks += [(source, "steps", sum(r.drafts for r in counted), drafts, 1, unreported),
                   (source, "accepted tokens", sum(r.accepted for r in counted), accepted, 1,
                    unreported)]
        if all(r.draft_tokens is not None for r in counted):
            checks.append((source, "draft tokens", sum(r.draft_tokens for r in counted),
                           tokens, k, unreported))
        if per_pos is not None and all(r.accepted_per_position is not None
                                       and len(r.accepted_per_position) == len(per_pos)
                                       for r in counted):
            sums = [sum(column) for column in zip(*(r.accepted_per_position for r in counted))]
            checks += [(source, f"accepted at position {i}", sums[i], per_pos[i], 1,
                        unreported) for i in range(len(per_pos))]
    if ok and all(isinstance(r.timings, dict) and _is_int(r.timings.get(_TIMED_DRAFTS))
                  and _is_int(r.timings.get(_TIMED_ACCEPTED)) for r in ok):
        unreported = sum(r.attempts for r in records) - len(ok)
        source = "its requests' timings"
        checks += [(source, f"draft tokens ({_TIMED_DRAFTS})",
                    sum(r.timings[_TIMED_DRAFTS] for r in ok), tokens, k, unreported),
                   (source, f"accepted tokens ({_TIMED_ACCEPTED})",
                    sum(r.timings[_TIMED_ACCEPTED] for r in ok), accepted, 1, unreported)]
    for source, name, theirs_each, window_value, width, unreported in checks:
        if window_value is None:
            continue
        noise = concurrency * width
        if not theirs_each - noise <= window_value \
                <= theirs_each + noise + unreported * width * max_tokens:
            slack = f" and {unreported} attempt(s) without counts" if unreported else ""
            return (f"the server contradicts itself: {name} {theirs_each} by {source}, "
                    f"{window_value} by its /metrics counters (beyond a counting noise of "
                    f"{noise}{slack})")
    return None


def _replay_warning(ok, where, *, seeded):
    """A warning when every request counted alike: one seeded sequence replayed.

    llama-server seeds from the request's ``seed``, else its ``--seed`` (``server-context.cpp``)."""
    counts = set()
    for r in ok:
        timings = r.timings or {}
        drafted = r.draft_tokens if r.draft_tokens is not None else timings.get(_TIMED_DRAFTS)
        accepted = r.accepted if r.accepted is not None else timings.get(_TIMED_ACCEPTED)
        counts.add((r.drafts, drafted, accepted))
    if len(ok) < 3 or len(counts) != 1:
        return None
    (_, drafted, accepted), = counts
    if not (isinstance(drafted, int) and isinstance(accepted, int) and 0 < accepted < drafted):
        return None
    why = ("the same prompt sent repeatedly, or a server that ignores the request's seed"
           if seeded else "a llama-server started with a fixed --seed replays one synthetic "
           "accept/reject sequence for every request without a seed of its own; pass --seed "
           "N so that request i carries N+i")
    return (f"{where}: all {len(ok)} requests drafted {drafted} tokens and accepted "
            f"{accepted}: one replayed sequence, not independent draws ({why})")


def _sampling(body_extra):
    out = {key: body_extra[key] for key in ("temperature", "max_tokens", "ignore_eos",
                                            "chat_template_kwargs") if key in body_extra}
    if "seed" in body_extra:
        out["seed"] = f"{body_extra['seed']} + request index"
    return out


def _check_server_k(server, metrics_text, k):
    """Refuse a cell whose K the server contradicts before any load is sent."""
    scrape = Scrape(f"{server.url}/metrics", metrics_text)
    rounded = rounded_counters(scrape)  # the counters since start, judged as every window is
    if rounded:
        raise MeasureError(f"{server.url}: before any load: {rounded_message(rounded)}; "
                           "nothing written for this cell")
    rec = record(server.engine)
    spec = server.speculative
    if rec.slots_endpoint:
        flag = rec.slot_fields[0]
        flags = spec.get(f"slots_{flag}")
        if not flags:
            return  # no slots listed (hidden): nothing the server says about its K
        if not any(flags):
            method, draft, k_flag = (rec.rows(s)[0].name for s in ("method", "draft", "k"))
            raise MeasureError(f"{server.url} runs no speculative decoding "
                               f"({rec.slots_endpoint}: {flag} false on every slot), so "
                               f"it cannot run K={k}: start {rec.launch_word} with {method} "
                               f"and a draft (e.g. {draft}, {k_flag} {k})")
    claims = []
    per_position = rec.metrics.get("per_position")
    if per_position and not rec.per_position_grows:
        positions = {dict(labels).get("position") for (name, labels) in scrape.values
                     if name == per_position} - {None}
        claims += [(len(positions), "per-position counters on /metrics")] if positions else []
    for key in rec.k_keys:
        said = spec.get(key)
        if _is_int(said) and said > 0:
            where = rec.slots_endpoint if key.startswith("slots.") else rec.info_endpoints[0]
            claims.append((said, f"{where} {key.removeprefix('slots.')}"))
    for said, how in claims:
        if said != k:
            raise MeasureError(f"{server.url} runs K={said} ({how}), not K={k}: restart it "
                               f"with K={k} or pass --k {said}")
