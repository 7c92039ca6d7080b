"""Server processes a measurement starts and always stops: the whole process group, on
every way out, and (Linux) when the parent dies, so that no server is left holding a GPU."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from goldenal.core.errors import ServerError, UsageError

# how much of a server log an error quotes
LOG_TAIL_BYTES = 2000
# seconds between SIGTERM and SIGKILL of the group
STOP_GRACE = 10.0
# seconds one readiness poll may take
POLL_TIMEOUT = 2.0


@dataclass(frozen=True)
class ServerProcess:
    """A started server: its command, process (group) id, log file and URLs."""

    command: str
    pid: int
    log: str
    url: str
    ready_url: str
    seconds_to_ready: float = 0.0


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fill(template, **values):
    """``template`` with ``{name}`` replaced; other braces (a JSON argument) stay intact."""
    out = template
    for name, value in values.items():
        out = out.replace("{" + name + "}", str(value))
    return out


def _die_with_parent():
    """In the child before exec: SIGTERM when the parent dies (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: no prctl
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def log_tail(path, limit=LOG_TAIL_BYTES):
    """The last ``limit`` bytes of a log, as text, starting at a line."""
    try:
        from goldenal.core.files import open_regular

        with open_regular(path) as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            data = fh.read(limit)
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    if size > limit and "\n" in text:
        text = text.split("\n", 1)[1]
    return text.rstrip()


def _ready(url):
    """HTTP status of a GET of ``url`` (body unread), or None when nothing answers."""
    import httpx

    try:
        with httpx.Client(timeout=POLL_TIMEOUT) as client:
            with client.stream("GET", url) as r:
                return r.status_code
    except httpx.HTTPError:
        return None


def _group_alive(pgid):
    """Whether a process of group ``pgid`` still runs (a zombie does not count)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    if not os.path.isdir("/proc/self"):
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # fields after the command: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def _stop(proc, grace=STOP_GRACE):
    """SIGTERM to the process group of ``proc``, SIGKILL to what is left after ``grace`` s."""
    def signal_group(sig):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()
        if not _group_alive(proc.pid):
            break
        time.sleep(0.05)
    signal_group(signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)


@contextlib.contextmanager
def serve(command, *, log, url, ready_url, timeout=600.0, poll=0.25):
    """Run ``command`` for a ``with`` block, yielding once ``ready_url`` answers 200.

    ServerError when it exits first or is not ready in ``timeout`` s; stopped either way."""
    if not isinstance(command, str) or not command.strip():
        raise UsageError("the server command is empty")
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise UsageError(f"`timeout` must be positive seconds, got {timeout!r}")
    log = os.fspath(log)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    try:
        t0 = time.monotonic()
        while True:
            code = proc.poll()
            if code is not None:
                last = log_tail(log).rsplit("\n", 1)[-1].strip()
                raise ServerError(f"the server exited (status {code}) before it was ready"
                                  + (f"; its log ends {last[:200]!r}" if last else "")
                                  + f" (server log: {log}; command: {command})")
            if _ready(ready_url) == 200:
                break
            if time.monotonic() - t0 > timeout:
                raise ServerError(f"the server was not ready within {timeout:g} s "
                                  f"({ready_url} never answered 200): {command} "
                                  f"(server log: {log})")
            time.sleep(poll)
        yield ServerProcess(command, proc.pid, log, url, ready_url, time.monotonic() - t0)
    finally:
        with _signals_held():
            _stop(proc)


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM held while a server stops (a second Ctrl-C must not orphan it)."""
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
