"""End-to-end tests against a real llama-server (a package, so its conftest is ``e2e.conftest``)."""
