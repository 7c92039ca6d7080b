"""Usage errors: the subcommand's own usage, and the option or command meant."""

import pytest


@pytest.mark.parametrize("argv, usage, error", [
    (["lookup", "minimax-m3", "--k", "3", "--thinking", "on", "--drft",
      "Inferact/MiniMax-M3-EAGLE3"], "usage: goldenal lookup [-h] --k K",
     "goldenal lookup: error: unrecognized arguments: --drft Inferact/MiniMax-M3-EAGLE3 "
     "(did you mean --draft?)"),
    (["show", "minimax-m3", "--drft=Inferact/MiniMax-M3-EAGLE3"], "usage: goldenal show [-h]",
     "goldenal show: error: unrecognized arguments: --drft=Inferact/MiniMax-M3-EAGLE3 "
     "(did you mean --draft?)"),
    (["audit", "--selct", "GAL2", "--ignroe", "GAL3"], "usage: goldenal audit [-h]",
     "goldenal audit: error: unrecognized arguments: --selct --ignroe GAL3 "
     "(did you mean --select, --ignore?)"),
    (["list", "--xyzzy"], "usage: goldenal list [-h]",
     "goldenal list: error: unrecognized arguments: --xyzzy"),
    (["--vesion"], "usage: goldenal [-h] [--version] COMMAND ...",
     "goldenal: error: unrecognized arguments: --vesion (did you mean --version?)"),
    (["lokup", "qwen3.5"], "usage: goldenal [-h] [--version] COMMAND ...",
     "goldenal: error: unknown command 'lokup'; did you mean lookup? (commands: lookup, list, "),
])
def test_a_mistyped_option_shows_the_commands_own_usage(run_cli, argv, usage, error):
    code, out, err = run_cli(*argv)
    assert (code, out) == (2, "")
    assert err.startswith(usage)
    assert err.splitlines()[-1].startswith(error)
    if not error.endswith(", "):
        assert err.splitlines()[-1] == error
