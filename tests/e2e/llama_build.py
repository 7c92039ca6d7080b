"""Build llama.cpp's ``llama-server`` once per machine, for the end-to-end tests.

The source is the llama.cpp tree vendored in the ``llama-cpp-python`` source
distribution on PyPI (``vendor/llama.cpp``), fetched with pip.  Only the
``llama-server`` target is built, for CPU, with the cmake flags of
``docs/engines.md`` §5.3.  Nothing of llama.cpp lives in this
repository: the result is cached outside the clone, keyed by version:

    $GOLDENAL_LLAMA_SERVER_DIR                          if set, else
    ${XDG_CACHE_HOME:-~/.cache}/goldenal/llama-server/<version>/

and holds ``bin/`` (``llama-server`` and its shared libraries), ``models/``
(the vocab-only GGUF files shipped with the source, used to write tiny test
models), ``build.log`` and the ``COMPLETE`` marker.  The directory is built
under a temporary name and renamed into place with the marker already inside,
so a half-finished build is never taken for a finished one; a file lock next
to it keeps concurrent builds (parallel test sessions, CI and a developer) from
colliding.

Run as a script (``python tests/e2e/llama_build.py``) it builds if needed and
prints the directory; ``.ci/run`` does that before pytest so the build time is
visible on its own.

A build says what it is doing from its first second: where it builds, how long
it takes, each step, where the log is, and every minute of the long compile
that it is still compiling.  The lines go to the terminal (``sys.__stderr__``)
even under pytest's output capture, so a first ``pytest`` never looks hung.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
from pathlib import Path

from filelock import FileLock, Timeout

VERSION = "0.3.36"  # llama-cpp-python release whose vendored llama.cpp is pinned
PACKAGE = "llama-cpp-python"
ENV_DIR = "GOLDENAL_LLAMA_SERVER_DIR"
MARKER = "COMPLETE"
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TOOLS=ON",
)


# what a first build costs, as the README states it
COST = "about 11 CPU-minutes, 10-40 minutes on a busy 2-core machine"
# seconds between "still compiling" lines
HEARTBEAT = 60.0
STEPS = 4


def say(message: str) -> None:
    """One progress line on the terminal, past any output capture (pytest's included)."""
    stream = sys.__stderr__ or sys.stderr
    try:
        stream.write(f"[llama-server build] {message}\n")
        stream.flush()
    except (OSError, ValueError):  # a closed or missing terminal: progress is optional
        pass


def _step(n: int, what: str, log) -> None:
    say(f"step {n}/{STEPS}: {what} (log: {log.name})")


class BuildError(RuntimeError):
    """The build could not be completed; the message says which step and where its log is."""


def cache_dir() -> Path:
    """Where the built server lives (not created)."""
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "goldenal" / "llama-server" / VERSION


def server_binary(root: Path) -> Path:
    return root / "bin" / "llama-server"


def server_env(root: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment in which ``server_binary(root)`` finds its shared libraries."""
    env = dict(os.environ if base is None else base)
    lib = str(root / "bin")
    env["LD_LIBRARY_PATH"] = lib + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def is_complete(root: Path) -> bool:
    return (root / MARKER).is_file() and server_binary(root).is_file()


def _run(cmd: list[str], log, cwd: Path | None = None, env: dict[str, str] | None = None,
         heartbeat: str | None = None) -> None:
    """Run ``cmd`` with its output in ``log``; with ``heartbeat``, say every HEARTBEAT
    seconds that it is still running."""
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    while True:
        try:
            proc.wait(HEARTBEAT)
            break
        except subprocess.TimeoutExpired:
            if heartbeat:
                say(f"{heartbeat}: {(time.monotonic() - started) / 60:.0f} min so far "
                    f"(log: {log.name})")
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    log.write(f"# exit {proc.returncode} after {time.monotonic() - started:.0f} s\n")
    log.flush()
    if proc.returncode != 0:
        raise BuildError(f"{cmd[0]} {cmd[1] if len(cmd) > 1 else ''} failed (exit {proc.returncode}); see {log.name}")


def _build_tools(work: Path, log) -> tuple[str, str]:
    """cmake and ninja: the machine's if present, else pip-installed into a private venv."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if cmake and ninja:
        return cmake, ninja
    tools = work / "tools-venv"
    venv.create(tools, with_pip=True)
    py = str(tools / "bin" / "python")
    _run([py, "-m", "pip", "install", "--quiet", "cmake", "ninja"], log)
    return (cmake or str(tools / "bin" / "cmake")), (ninja or str(tools / "bin" / "ninja"))


def _fetch_source(work: Path, log) -> Path:
    """Download the sdist with pip and unpack only its ``vendor/llama.cpp`` tree."""
    dl = work / "sdist"
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
          f"{PACKAGE}=={VERSION}", "-d", str(dl)], log)
    archives = sorted(dl.glob("*.tar.gz"))
    if len(archives) != 1:
        raise BuildError(f"expected one source archive in {dl}, found {len(archives)}")
    src = work / "src"
    with tarfile.open(archives[0]) as tar:
        members = [m for m in tar.getmembers() if "/vendor/llama.cpp/" in m.name + "/"]
        if not members:
            raise BuildError(f"{archives[0].name} has no vendor/llama.cpp tree")
        tar.extractall(src, members=members, filter="data")
    (tree,) = src.glob("*/vendor/llama.cpp")
    archives[0].unlink()
    return tree


def _build(tmp: Path) -> None:
    with open(tmp / "build.log", "w") as log:
        log.write(f"# {PACKAGE}=={VERSION}: vendored llama.cpp, target llama-server (CPU)\n")
        log.flush()
        _step(1, "cmake and ninja (the machine's, else pip-installed into a private venv)", log)
        cmake, ninja = _build_tools(tmp, log)
        _step(2, f"the {PACKAGE} {VERSION} source distribution (pip download)", log)
        tree = _fetch_source(tmp, log)
        build = tmp / "build"
        jobs = str(max(1, min(os.cpu_count() or 1, 8)))
        _step(3, "configuring with cmake", log)
        _run([cmake, "-S", str(tree), "-B", str(build), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}",
              *CMAKE_FLAGS], log)
        _step(4, f"compiling llama-server with {jobs} job(s): the long step", log)
        _run([cmake, "--build", str(build), "--target", "llama-server", "-j", jobs], log,
             heartbeat="still compiling")
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        for f in (build / "bin").iterdir():
            if f.name == "llama-server" or ".so" in f.name:
                shutil.copy2(f, bin_dir / f.name, follow_symlinks=False)  # keeps soname links
        models = tmp / "models"
        models.mkdir()
        for f in (tree / "models").glob("ggml-vocab-*.gguf"):
            shutil.copy2(f, models / f.name)
        shutil.rmtree(build)
        shutil.rmtree(tmp / "src")
        shutil.rmtree(tmp / "sdist", ignore_errors=True)
        shutil.rmtree(tmp / "tools-venv", ignore_errors=True)
        if not server_binary(tmp).is_file():
            raise BuildError(f"the build produced no llama-server; see {log.name}")
        (tmp / MARKER).write_text(f"{PACKAGE}=={VERSION}\n")


def ensure_llama_server(root: Path | None = None) -> Path:
    """Return the directory of a complete build, building it first if needed (locked, atomic)."""
    root = cache_dir() if root is None else root
    if is_complete(root):
        return root
    say(f"no llama-server in {root} yet: building it once for the end-to-end tests "
        f"({COST}; later runs reuse it; GOLDENAL_SKIP_E2E=1 skips those tests)")
    root.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(root) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        say(f"another process is building it; waiting for {lock.lock_file}")
        lock.acquire()
    try:
        if is_complete(root):  # another process finished it while we waited
            say(f"ready in {root} (built by the other process)")
            return root
        started = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.building-", dir=root.parent))
        try:
            _build(tmp)
        except BaseException:
            failed = root.parent / f"{root.name}.failed-build.log"
            if (tmp / "build.log").is_file():
                shutil.copy2(tmp / "build.log", failed)
                say(f"failed; the log is kept as {failed}")
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if root.exists():  # a stale, incomplete directory from an interrupted older layout
            shutil.rmtree(root)
        os.replace(tmp, root)
        say(f"done in {(time.monotonic() - started) / 60:.1f} min: {root}")
    finally:
        lock.release()
    return root


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    try:
        root = ensure_llama_server()
    except BuildError as exc:
        print(f"llama-server build failed: {exc}", file=sys.stderr)
        return 1
    print(f"llama-server {PACKAGE}=={VERSION} ready in {root} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
