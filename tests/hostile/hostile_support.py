"""Helpers of the hostile-input suite (tests/hostile/: one test module per class of attack)."""

import os
import subprocess

UPSTREAM = (
    "# Source GitHub Actions run: https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1\n"
    "# dataset: coding | temperature: 1.0 | top_p: 0.95 | output_len: 4096\n"
    "# Measured on {model} (B300, vLLM EAGLE3), per num_speculative_tokens.\n"
    "{model}:\n  thinking_on:\n    2: 2.39\n    3: {value}\n")


def upstream(directory, name="curve", *, model="minimax-m3", value="2.78"):
    """An upstream-shaped curve file (values and a header with a source run)."""
    path = os.path.join(directory, f"{name}.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(UPSTREAM.format(model=model, value=value))
    return path


def snapshot(directory):
    """Every file under ``directory`` (recursively) with its bytes."""
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, directory)] = fh.read()
    return out


def run_goldenal(*args, cwd):
    """``goldenal ARGS`` as a user runs it, in ``cwd``: ``(exit code, stdout, stderr)``."""
    from conftest import goldenal_cmd

    proc = subprocess.run([*goldenal_cmd(), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def failing_replace(monkeypatch, fails, err):
    """Make ``os.replace`` in goldenal.core.files raise ``OSError(err)`` when ``fails(dst, n)``.

    ``n`` counts the calls, this one included.

    Returns the list of destination names it was called with, in order.
    """
    from goldenal.core import files

    calls, real = [], os.replace

    def replace(src, dst, **kw):
        calls.append(os.path.basename(dst))
        if fails(dst, len(calls)):
            raise OSError(err, os.strerror(err))
        return real(src, dst, **kw)

    monkeypatch.setattr(files.os, "replace", replace)
    return calls


def fork(target, *args):
    """Run ``target(*args)`` in a forked child: its pid (exit code 0, or 1 if it raised)."""
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 0
        try:
            target(*args)
        except BaseException:  # noqa: BLE001 - report in the exit code only
            code = 1
        os._exit(code)
    return pid


def die_at_operation(die_at, names=("replace", "unlink", "fsync", "chmod", "open", "write")):
    """In a forked child: kill -9 ourselves at the ``die_at``-th call of ``os.<names>``.

    Returns the one-item list counting the calls so far.
    """
    import signal

    calls = [0]

    def hook(real):
        def wrapper(*args, **kwargs):
            calls[0] += 1
            if calls[0] == die_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        return wrapper

    for name in names:
        setattr(os, name, hook(getattr(os, name)))
    return calls
