"""Start and stop ``llama-server`` processes for the end-to-end tests.

Every server listens on 127.0.0.1 on a free port, is started in its own
process group (a launcher script and the server it starts stop together) and
is stopped by :meth:`LlamaServer.stop`, which the fixtures always call.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from .llama_build import server_binary, server_env

HOST = "127.0.0.1"


class ServerError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def base_args(root: Path, target: Path, *, port: int, draft: Path | None = None, k: int = 3,
              ctx: int = 1024) -> list[str]:
    """``llama-server`` with one slot, metrics on, and draft-model speculative decoding.

    One thread each: on a busy machine several threads spin at every barrier of
    a tiny graph (here 2 threads gave 17 tokens/s, one thread about 2000).
    """
    argv = [str(server_binary(root)), "--model", str(target), "--host", HOST, "--port", str(port),
            "--ctx-size", str(ctx), "--parallel", "1", "--threads", "1", "--threads-batch", "1",
            "--metrics", "--no-webui"]
    if draft is not None:
        argv += ["--spec-type", "draft-simple", "--spec-draft-model", str(draft),
                 "--spec-draft-n-max", str(k), "--spec-draft-threads", "1"]
    return argv


class LlamaServer:
    """One running server (or a launcher script that starts one)."""

    def __init__(self, argv, *, root: Path, port: int, log: Path, env=None, cwd=None):
        self.argv = [str(a) for a in argv]
        self.port = port
        self.url = f"http://{HOST}:{port}"
        self.log = Path(log)
        self._fh = open(self.log, "wb")
        self.proc = subprocess.Popen(self.argv, stdout=self._fh, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=server_env(root, env),
                                     cwd=cwd, start_new_session=True)

    def log_tail(self, lines=30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, timeout: float = 120.0) -> "LlamaServer":
        """Poll ``/health`` until the model is loaded (200); a dead process fails at once."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise ServerError(f"llama-server exited with {self.proc.returncode} before "
                                      f"it was ready; {self.log}:\n{self.log_tail()}")
                try:
                    if client.get(self.url + "/health").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
        self.stop()
        raise ServerError(f"llama-server not healthy after {timeout:.0f} s; {self.log}:\n"
                          f"{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after 10 s; idempotent."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
