"""A stub OpenAI-compatible speculative-decoding server for the ``measure`` tests.

It answers like vLLM (``owned_by: vllm``, ``vllm:spec_decode_*`` counters with
an ``engine`` label per data-parallel rank and ``_created`` samples,
``/version``) or like llama.cpp's ``llama-server`` (``owned_by: llamacpp``,
``llamacpp:spec_decode_*`` counters without labels, a per-position family that
appears only after the first speculative request, ``/props``, ``/slots`` (as a
real llama-server of llama-cpp-python 0.3.36 answers), ``timings`` with
``draft_n``/``draft_n_accepted`` in the last chunk) or like SGLang (``owned_by:
sglang``, the ``sglang:spec_accept_length`` gauge and ``spec_verify_calls_total``
counter on ``/metrics``, ``/get_server_info``, per-request counts in
``choices[0].meta_info`` of a non-streaming answer to ``return_meta_info``, which
a stream refuses, and in ``sglext.spec_tokens_details``, as SGLang 0.5.23's
``sglang/srt/entrypoints/openai/serving_chat.py`` answers; earlier releases'
spellings are kept as states of :attr:`StubServer.sglang_release`).  Shapes follow
vLLM ``vllm/v1/spec_decode/metrics.py`` (docs/formats.md §2.2) and llama.cpp
``tools/server/server-task.cpp`` / ``server-common.cpp`` (llama.cpp vendored in
llama-cpp-python 0.3.36).

Every request's speculative steps are a pure function of its prompt
(:func:`plan`), so a test knows the exact counts it must read back.
Listens on 127.0.0.1 on a free port; ``stop()`` always shuts it down.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def plan(text, k):
    """Accepted drafts per step for a prompt: ``[n_0, n_1, ...]``, each in 0..k."""
    seed = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    steps = 5 + seed % 7
    return [(seed >> (3 * j)) % (k + 1) for j in range(steps)]


def counts(text, k):
    """(steps, draft_tokens, accepted, per_position) of one request."""
    accepted = plan(text, k)
    per_pos = [sum(1 for a in accepted if a > i) for i in range(k)]
    return len(accepted), k * len(accepted), sum(accepted), per_pos


def write_prompts(path, texts, *, prefix="p", head=""):
    """A prompts file as ``measure --prompts`` reads it: one ``{id, prompt}`` line a text.
    Returns its path as a string."""
    path.write_text(head + "".join(json.dumps({"id": f"{prefix}{i}", "prompt": t}) + "\n"
                                   for i, t in enumerate(texts)))
    return str(path)


class StubServer:
    def __init__(self, engine="llamacpp", k=3, dp=1, port=0):
        self.engine, self.k, self.dp = engine, k, dp
        self.lock = threading.Lock()
        self.fail = {}          # prompt text -> failures left (-1: always), HTTP 500
        # prompt text -> (status, JSON body, headers) the failures above answer instead
        self.fail_with = {}
        self.truncate = {}      # prompt text -> truncated streams left
        self.delay = 0.0        # seconds per streamed chunk
        self.reset_after = None  # restart (counters to zero) after this many completions
        self.metrics_enabled = True
        self.base = 0           # llama.cpp totals start here (a server that ran before)
        self.down_on_reset = 0  # after a restart, this many /metrics requests get no answer
        self.metrics_down = 0
        # which SGLang answers: "0.5.23" (the pinned release), "2026-04" (the renamed
        # keys with their aliases), "2025" (spec_accept_token_num, no histogram),
        # "completion-only" (spec_verify_ct and completion_tokens alone)
        self.sglang_release = "0.5.23"
        self.send_meta = True   # False: an SGLang without meta_info in its answers
        self.sglang_stream = False  # True: counts only in a stream's final sglext chunk
        self.requests_seen = []
        # llama.cpp /slots (None: started with --no-slots) and extra /props request defaults
        self.slots = [{"id": 0, "n_ctx": 4096, "speculative": True, "is_processing": False}]
        self.props_params = {}
        self._zero()
        self.completed = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def _zero(self):
        self.created = time.time()
        self.started = self.created
        self.c = {e: {"drafts": 0, "tokens": 0, "accepted": 0, "pos": [0] * self.k}
                  for e in range(self.dp)}
        self.pos_seen = False

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    # ------------------------------------------------------------------ expositions
    def metrics_text(self):
        with self.lock:
            if self.engine == "sglang":
                c = self.c[0]
                mean = 1 + c["accepted"] / c["drafts"] if c["drafts"] else 0.0
                text = ("# HELP sglang:spec_accept_length The average acceptance length of "
                        "speculative decoding.\n# TYPE sglang:spec_accept_length gauge\n"
                        f'sglang:spec_accept_length{{model_name="stub/m"}} {mean}\n')
                if self.sglang_release == "0.5.23":
                    # metrics_collector.py:1865-1866, grown by spec_verify_ct per finished
                    # request (:2112)
                    text += ("# HELP sglang:spec_verify_calls_total The number of "
                             "speculative verify calls.\n"
                             "# TYPE sglang:spec_verify_calls_total counter\n"
                             f'sglang:spec_verify_calls_total{{model_name="stub/m"}} '
                             f'{float(c["drafts"])}\n')
                return text
            if self.engine == "llamacpp":
                c = self.c[0]
                out = []
                for name, value in (("spec_decode_num_draft_tokens_total", c["tokens"]),
                                    ("spec_decode_num_accepted_tokens_total", c["accepted"]),
                                    ("spec_decode_num_drafts_total", c["drafts"])):
                    # a C++ double on a default stream: six significant digits
                    out += [f"# HELP llamacpp:{name} Speculative: ...",
                            f"# TYPE llamacpp:{name} counter",
                            f"llamacpp:{name} {float(value + self.base):g}"]
                out += ["# HELP llamacpp:requests_processing Number of requests processing",
                        "# TYPE llamacpp:requests_processing gauge",
                        "llamacpp:requests_processing 0"]
                if self.pos_seen:
                    out += ["# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total "
                            "Accepted tokens per draft position",
                            "# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total "
                            "counter"]
                    out += [f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total'
                            f'{{position="{i}"}} {v}' for i, v in enumerate(c["pos"])]
                return "\n".join(out) + "\n"
            out = ["# HELP process_start_time_seconds Start time of the process",
                   "# TYPE process_start_time_seconds gauge",
                   f"process_start_time_seconds {self.started:.2f}"]
            for name, key in (("num_drafts", "drafts"), ("num_draft_tokens", "tokens"),
                              ("num_accepted_tokens", "accepted")):
                full = f"vllm:spec_decode_{name}"
                out += [f"# HELP {full}_total n", f"# TYPE {full}_total counter"]
                for e in range(self.dp):
                    out.append(f'{full}_total{{engine="{e}",model_name="stub/m"}} '
                               f'{float(self.c[e][key])}')
                out += [f"# HELP {full}_created n", f"# TYPE {full}_created gauge"]
                for e in range(self.dp):
                    out.append(f'{full}_created{{engine="{e}",model_name="stub/m"}} '
                               f'{self.created}')
            full = "vllm:spec_decode_num_accepted_tokens_per_pos"
            out += [f"# HELP {full}_total n", f"# TYPE {full}_total counter"]
            for e in range(self.dp):
                for i in range(self.k):
                    out.append(f'{full}_total{{engine="{e}",model_name="stub/m",'
                               f'position="{i}"}} {float(self.c[e]["pos"][i])}')
            return "\n".join(out) + "\n"

    def _count(self, text):
        steps, draft_tokens, acc, per_pos = counts(text, self.k)
        with self.lock:
            c = self.c[self.completed % self.dp]
            c["drafts"] += steps
            c["tokens"] += draft_tokens
            c["accepted"] += acc
            c["pos"] = [x + y for x, y in zip(c["pos"], per_pos)]
            self.pos_seen = True
            self.completed += 1
            if self.reset_after is not None and self.completed == self.reset_after:
                self._zero()
                self.metrics_down = self.down_on_reset
        return steps, draft_tokens, acc, per_pos

    def spec_meta(self, text):
        """A finished request's speculative ``meta_info``, as the stub's SGLang release
        writes it.  0.5.23: ``sglang/srt/managers/tokenizer_manager.py:3138-3210``
        (``_calculate_spec_decoding_metrics``): proposed drafts are ``spec_verify_ct *
        (speculative_num_draft_tokens - 1)``, and the histogram is grown on demand
        (``schedule_batch.py:1566``), so it ends at the most drafts one step accepted.
        2026-04: the same plus the aliases sgl-project/sglang#24081 kept.  2025:
        ``spec_accept_token_num`` / ``spec_draft_token_num`` (sgl-project/sglang#13754)."""
        accepted = plan(text, self.k)
        steps, draft_tokens, acc, _ = self._count(text)
        tokens = sum(a + 1 for a in accepted)
        meta = {"id": "stub", "finish_reason": {"type": "length", "length": tokens},
                "prompt_tokens": 7, "completion_tokens": tokens, "cached_tokens": 0}
        hist = [accepted.count(i) for i in range(max(accepted) + 1)]
        release = self.sglang_release
        if release in ("0.5.23", "2026-04"):
            meta.update(spec_accept_rate=acc / draft_tokens, spec_accept_length=tokens / steps,
                        spec_num_correct_drafts=acc, spec_num_proposed_drafts=draft_tokens,
                        spec_verify_ct=steps, spec_correct_drafts_histogram=hist)
            if release == "2026-04":
                meta.update(spec_accepted_drafts=acc, spec_proposed_drafts=draft_tokens,
                            spec_accept_histogram=hist)
        elif release == "2025":
            meta.update(spec_verify_ct=steps, spec_accept_length=tokens / steps,
                        spec_accept_token_num=acc, spec_draft_token_num=draft_tokens)
        else:
            meta.update(spec_verify_ct=steps, spec_accept_length=tokens / steps)
        return meta, tokens

    def spec_tokens_details(self, meta):
        """``sglext.spec_tokens_details`` (0.5.23 ``entrypoints/openai/utils.py:310``
        ``spec_tokens_details_from_meta_info``: absent keys become 0 or [])."""
        if self.sglang_release != "0.5.23":
            return None  # the field came with sgl-project/sglang#33518
        ints = ("spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_verify_ct")
        floats = ("spec_accept_rate", "spec_accept_length", "spec_cap_length",
                  "spec_block_accept_length")
        lists = ("spec_correct_drafts_histogram", "spec_cap_lens_histogram")
        return {**{key: meta.get(key) or 0.0 for key in floats},
                **{key: meta.get(key) or 0 for key in ints},
                **{key: meta.get(key) or [] for key in lists}}

    def complete(self, text, body):
        """A non-streaming SGLang answer: ``meta_info`` for ``return_meta_info``
        (``serving_chat.py:2985``), ``sglext`` for ``return_spec_tokens_details``
        (``serving_chat.py:2865-2894``)."""
        meta, tokens = self.spec_meta(text)
        choice = {"index": 0, "message": {"role": "assistant", "content": "x" * tokens},
                  "finish_reason": "length"}
        if self.send_meta and body.get("return_meta_info"):
            choice["meta_info"] = meta
        answer = {"id": "stub", "object": "chat.completion", "model": "stub/m",
                  "choices": [choice], "usage": {"prompt_tokens": 7, "completion_tokens": tokens,
                                                 "total_tokens": 7 + tokens}}
        details = self.spec_tokens_details(meta)
        if self.send_meta and body.get("return_spec_tokens_details") and details:
            answer["sglext"] = {"spec_tokens_details": details}
        return answer

    # ------------------------------------------------------------------ handler
    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            # keep-alive for the JSON answers, as real servers; streams end by closing
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                # headers and body go out as two writes: without this, Nagle's algorithm
                # and delayed ACKs hold every keep-alive answer for ~40 ms
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args):
                pass

            def _json(self, status, doc, headers=None):
                body = json.dumps(doc).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def parse_request(self):
                ok = super().parse_request()
                # a base URL with a path (http://host:port/k3) reaches the same stub
                self.path = re.sub(r"^/k\d+(?=/)", "", self.path)
                return ok

            def do_GET(self):
                if self.path == "/health":
                    if getattr(stub, "unhealthy", False):  # loading the model, for ever
                        return self._json(503, {"error": {"message": "Loading model"}})
                    return self._json(200, {"status": "ok"})
                if self.path == "/v1/models":
                    owner = stub.engine
                    return self._json(200, {"object": "list", "data": [
                        {"id": "stub/m", "object": "model", "owned_by": owner}]})
                if self.path == "/metrics":
                    with stub.lock:
                        down = stub.metrics_down > 0
                        stub.metrics_down -= down
                    if down:  # a restarting server: the connection closes unanswered
                        self.close_connection = True
                        return None
                    if not stub.metrics_enabled:
                        return self._json(501, {"error": {"message": "This server does not "
                                                          "support metrics endpoint."}})
                    body = stub.metrics_text().encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    return self.wfile.write(body)
                if self.path == "/props" and stub.engine == "llamacpp":
                    return self._json(200, {
                        "default_generation_settings": {"params": {
                            "speculative.types": "none", **stub.props_params},
                            "n_ctx": 4096},
                        "total_slots": 1, "model_path": "/models/target.gguf",
                        "build_info": "b1-stub", "endpoint_metrics": True})
                if self.path == "/slots" and stub.engine == "llamacpp":
                    if stub.slots is None:
                        return self._json(501, {"error": {"code": 501, "message": "This "
                                                          "server does not support slots "
                                                          "endpoint.", "type":
                                                          "not_supported_error"}})
                    return self._json(200, stub.slots)
                if self.path == "/get_server_info" and stub.engine == "sglang":
                    return self._json(200, {"version": stub.sglang_release,
                                            "speculative_algorithm": "EAGLE3",
                                            "speculative_num_steps": stub.k,
                                            "speculative_eagle_topk": 1})
                if self.path == "/version" and stub.engine == "vllm":
                    return self._json(200, {"version": "0.20.1"})
                return self._json(404, {"error": "not found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/v1/chat/completions":
                    return self._json(404, {"error": "not found"})
                text = body["messages"][-1]["content"]
                with stub.lock:
                    stub.requests_seen.append(dict(body))
                    left = stub.fail.get(text, 0)
                    if left:
                        stub.fail[text] = left - 1 if left > 0 else -1
                    cut = stub.truncate.get(text, 0)
                    if cut:
                        stub.truncate[text] = cut - 1
                if left:
                    status, doc, headers = stub.fail_with.get(
                        text, (500, {"error": {"message": "injected failure"}}, {}))
                    return self._json(status, doc, headers)
                if stub.engine == "sglang" and not body.get("stream"):
                    return self._json(200, stub.complete(text, body))
                if stub.engine == "sglang" and body.get("return_meta_info"):
                    # serving_chat.py:1321-1325
                    return self._json(400, {"object": "error", "message": (
                        "return_meta_info is not supported with streaming. Please set "
                        "stream=false when using return_meta_info=true.")})
                accepted = plan(text, stub.k)
                t0 = time.perf_counter()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

                def event(doc):
                    self.wfile.write(b"data: " + json.dumps(doc).encode() + b"\n\n")
                    self.wfile.flush()

                tokens = 0
                for a in accepted:
                    tokens += a + 1
                    event({"object": "chat.completion.chunk", "choices": [
                        {"index": 0, "delta": {"content": "x" * (a + 1)},
                         "finish_reason": None}]})
                    if stub.delay:
                        time.sleep(stub.delay)
                    if cut:
                        return  # connection closes mid-stream
                details = None
                if stub.engine == "sglang":
                    details = stub.spec_tokens_details(stub.spec_meta(text)[0])
                else:
                    steps, draft_tokens, acc, per_pos = stub._count(text)
                final = {"object": "chat.completion.chunk", "choices": [
                    {"index": 0, "delta": {}, "finish_reason": "length"}]}
                if stub.engine == "llamacpp":
                    final["timings"] = {"predicted_n": tokens, "prompt_ms": 0.0,
                                        "predicted_ms": (time.perf_counter() - t0) * 1e3,
                                        "draft_n": draft_tokens, "draft_n_accepted": acc}
                event(final)
                if details and body.get("return_spec_tokens_details"):
                    # the final choices=[] chunk of serving_chat.py:2703-2731
                    event({"object": "chat.completion.chunk", "choices": [],
                           "sglext": {"spec_tokens_details": details}})
                event({"object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": 7, "completion_tokens": tokens,
                                 "total_tokens": 7 + tokens}})
                self.wfile.write(b"data: [DONE]\n\n")

        return Handler
