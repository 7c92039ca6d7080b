"""A misbehaving OpenAI-compatible server for ``measure``: one mode per class of attack.

Plain sockets, one thread per connection, 127.0.0.1 only.  In its normal
mode it answers as a vLLM server (``owned_by: vllm``, ``vllm:spec_decode_*``
counters, ``/version``, streamed chat completions whose last chunk carries
vLLM's per-request ``metrics.speculative_decoding``): every request takes
``STEPS`` steps and accepts ``PER_POS`` drafts by position, so a normal run
reads back exact counts.  Each mode below spoils one answer.
"""

from __future__ import annotations

import json
import socket
import threading
import time

K = 3
STEPS = 10
PER_POS = (8, 7, 5)            # accepted per position in one request: 20 accepted, AL 3.0
HIST = (2, 1, 2, 5)            # steps by drafts accepted: 0, 1, 2, 3 (the same 20 accepted)

MODES = {
    "normal": "a vLLM server that tells the truth",
    "metrics-endless": "/metrics never ends (no Content-Length, bytes forever)",
    "metrics-drip": "/metrics sends one byte every 0.2 s",
    "metrics-gzip": "/metrics compressed though identity was asked for",
    "metrics-huge-counts": "/metrics counts 10^30 steps",
    "metrics-many-series": "/metrics names the speculative families 30,000 times",
    "models-deep": "/v1/models nested 100,000 levels deep",
    "models-declared-huge": "/v1/models declares a 1 GiB body",
    "version-deep": "/version nested 100,000 levels deep",
    "sse-endless-line": "a stream whose first line never ends",
    "sse-deep-event": "a stream event nested 100,000 levels deep",
    "sse-drip": "a stream that sends one byte every 0.2 s",
    "retry-after-superscript": "HTTP 429 with Retry-After: ² (a non-ASCII digit), then fine",
    "counts-impossible": "per-request counts: 1,000,000 accepted in 10 steps",
    "counts-increasing": "per-request histogram whose positions accept more further out",
    "contradiction": "per-request counts say AL 3.9, the counters 3.0",
}


class HostileServer:
    def __init__(self, mode="normal"):
        if mode not in MODES:
            raise ValueError(mode)
        self.mode = mode
        self.lock = threading.Lock()
        self.completed = 0
        self.posts = 0
        self.headers_seen = []
        self.paths_seen = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping = True
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)

    # ---------------------------------------------------------------- plumbing
    def _serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn):
        try:
            with conn:
                conn.settimeout(30)
                while not self.stopping and self._one(conn):
                    pass
        except OSError:  # the client went away: a refused answer, a deadline
            pass

    def _one(self, conn):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk:
                return False
            head += chunk
            if len(head) > 1 << 20:
                return False
        head, _, body = head.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return False
            body += chunk
        with self.lock:
            self.headers_seen.append(headers)
            self.paths_seen.append(path)
        return self._route(conn, method, path.split("?", 1)[0], body)

    @staticmethod
    def _send(conn, status, body, content_type="application/json", extra=()):
        head = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}",
                f"Content-Length: {len(body)}", *extra]
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        return True

    def _json(self, conn, doc, status=200, extra=()):
        return self._send(conn, status, json.dumps(doc).encode(), extra=extra)

    @staticmethod
    def _deep(n=100_000):
        return ("[" * n + "]" * n).encode()

    # ---------------------------------------------------------------- answers
    def _route(self, conn, method, path, body):
        mode = self.mode
        if method == "GET" and path == "/v1/models":
            if mode == "models-deep":
                return self._send(conn, 200, b'{"data": ' + self._deep() + b"}")
            if mode == "models-declared-huge":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 1073741824\r\n\r\n{")
                return False
            return self._json(conn, {"object": "list", "data": [
                {"id": "hostile/m", "object": "model", "owned_by": "vllm"}]})
        if method == "GET" and path == "/version":
            if mode == "version-deep":
                return self._send(conn, 200, b'{"version": ' + self._deep() + b"}")
            return self._json(conn, {"version": "0.20.1"})
        if method == "GET" and path == "/metrics":
            return self._metrics(conn)
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(conn, json.loads(body or b"{}"))
        return self._json(conn, {"error": "not found"}, status=404)

    def _metrics(self, conn):
        mode = self.mode
        if mode == "metrics-endless":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close"
                         b"\r\n\r\n")
            line = b"# HELP filler " + b"x" * 4000 + b"\n"
            while not self.stopping:
                conn.sendall(line * 16)
            return False
        if mode == "metrics-drip":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                         b"100000\r\n\r\n")
            while not self.stopping:
                conn.sendall(b"#")
                time.sleep(0.2)
            return False
        if mode == "metrics-many-series":
            return self._send(conn, 200, "".join(
                f'vllm:spec_decode_num_drafts_total{{engine="{i}"}} 0\n'
                for i in range(30_000)).encode(), "text/plain")
        with self.lock:
            n = self.completed
        steps, accepted, pos = n * STEPS, n * sum(PER_POS), [n * p for p in PER_POS]
        if mode == "metrics-huge-counts" and n:
            steps = 10 ** 30
        out = []
        for name, value in (("num_drafts", steps), ("num_draft_tokens", K * steps),
                            ("num_accepted_tokens", accepted)):
            out += [f"# TYPE vllm:spec_decode_{name}_total counter",
                    f'vllm:spec_decode_{name}_total{{engine="0",model_name="m"}} {float(value)}']
        out.append("# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter")
        out += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",'
                f'position="{i}"}} {float(v)}' for i, v in enumerate(pos)]
        body = ("\n".join(out) + "\n").encode()
        if mode == "metrics-gzip":
            import gzip

            return self._send(conn, 200, gzip.compress(body), "text/plain",
                              ("Content-Encoding: gzip",))
        return self._send(conn, 200, body, "text/plain")

    def _chat(self, conn, request):
        mode = self.mode
        with self.lock:
            self.posts += 1
            first = self.posts == 1
        if mode == "retry-after-superscript" and first:
            return self._json(conn, {"error": {"message": "slow down"}}, status=429,
                              extra=("Retry-After: \u00b2".encode().decode("latin-1"),))
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Connection: close\r\n\r\n")
        if mode == "sse-endless-line":
            conn.sendall(b'data: {"choices": [{"delta": {"content": "')
            while not self.stopping:
                conn.sendall(b"x" * 65536)
            return False
        if mode == "sse-drip":
            while not self.stopping:
                conn.sendall(b":")
                time.sleep(0.2)
            return False
        if mode == "sse-deep-event":
            conn.sendall(b"data: " + self._deep() + b"\n\n")
            return False

        def event(doc):
            conn.sendall(b"data: " + json.dumps(doc).encode() + b"\n\n")

        for _ in range(STEPS):
            event({"object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {"content": "abc"}, "finish_reason": None}]})
        with self.lock:
            self.completed += 1
        spec = {"num_spec_steps": STEPS, "num_draft_tokens": K * STEPS,
                "num_accepted_draft_tokens": sum(PER_POS), "acceptance_histogram": list(HIST)}
        if mode == "counts-impossible":
            spec["num_accepted_draft_tokens"] = 1_000_000
            spec["acceptance_histogram"] = None
        if mode == "counts-increasing":
            spec["acceptance_histogram"] = [5, -3, 3, 5]   # sums to 10; position 0 < 1
            spec["num_accepted_draft_tokens"] = 12
        if mode == "contradiction":
            spec["num_accepted_draft_tokens"] = 29            # AL 3.9
            spec["acceptance_histogram"] = [0, 0, 1, 9]
        event({"object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {}, "finish_reason": "length"}],
            "metrics": {"speculative_decoding": spec}})
        event({"object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": 7, "completion_tokens": 30, "total_tokens": 37}})
        conn.sendall(b"data: [DONE]\n\n")
        return False
