"""Fixtures for the end-to-end tests against a real ``llama-server``.

``llama_root`` builds the server once per machine (see ``llama_build.py``),
``tiny_models`` writes the GGUF models of the session, ``start_llama`` starts
servers (each stopped at the end of the session at the latest) and
``llama_server`` is one server with real draft-model speculative decoding.

In CI (``CI=true``) a failed build or start is a test failure.  Elsewhere,
``GOLDENAL_SKIP_E2E=1`` skips these tests; without it they run as in CI.
"""

from __future__ import annotations

import os

import pytest

from . import llama_build
from .llama_server import LlamaServer, ServerError, base_args, free_port

K = 3


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _opted_out() -> bool:
    from goldenal.core.envflags import env_flag

    return env_flag(os.environ, "GOLDENAL_SKIP_E2E")


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def llama_root():
    """The directory of a complete ``llama-server`` build (built here when missing)."""
    if _opted_out() and not _in_ci():
        pytest.skip("GOLDENAL_SKIP_E2E is set: end-to-end tests against llama-server skipped")
    try:
        return llama_build.ensure_llama_server()
    except Exception as exc:  # a build failure is a failure, never a skip
        pytest.fail(f"building llama-server failed: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def tiny_models(llama_root, tmp_path_factory):
    """``{"target", "draft", "noisy"}``: tiny GGUF models written for this session."""
    from .tiny_models import VOCAB_FILE, write_models

    return write_models(tmp_path_factory.mktemp("models"), llama_root / "models" / VOCAB_FILE)


@pytest.fixture(scope="session")
def start_llama(llama_root, tmp_path_factory):
    """``start(argv=None, *, port=None, env=None, cwd=None, **base) -> LlamaServer`` (ready).

    ``argv`` is a full command line (a launcher script, say) that must start a
    server on ``port``; without it the command is :func:`llama_server.base_args`
    with ``base`` (``target``, ``draft``, ``k``) plus ``extra`` arguments.
    """
    started = []
    logs = tmp_path_factory.mktemp("llama-logs")

    def start(argv=None, *, port=None, env=None, cwd=None, extra=(), **base):
        port = port or free_port()
        if argv is None:
            argv = base_args(llama_root, port=port, **base) + list(extra)
        server = LlamaServer(argv, root=llama_root, port=port, env=env, cwd=cwd,
                             log=logs / f"server-{len(started)}-{port}.log")
        started.append(server)
        try:
            return server.wait_ready()
        except ServerError as exc:
            server.stop()
            pytest.fail(str(exc), pytrace=False)

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def llama_server(start_llama, tiny_models):
    """A server with real speculative decoding: target + perturbed draft, K=3, metrics on."""
    server = start_llama(target=tiny_models["target"], draft=tiny_models["noisy"], k=K)
    yield server
    server.stop()
