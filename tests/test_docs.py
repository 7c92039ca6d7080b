"""docs/cli.md is generated from every command's --help and must be current."""

import importlib
import subprocess
import sys

import pytest

from goldenal import _docs
from goldenal.cli import COMMANDS

from conftest import ROOT


def _module(name):
    module = "goldenal.commands." + COMMANDS[name][0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        pytest.skip(f"command {name!r} is not installed in this checkout ({module})")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help(name):
    module = _module(name)
    doc = (module.__doc__ or "").strip()
    assert doc, f"goldenal {name}: the command module has no docstring (its --help text)"
    assert COMMANDS[name][1].strip(), f"goldenal {name}: no one-line summary in COMMANDS"
    assert callable(getattr(module, "configure", None)) and callable(getattr(module, "run", None))
    help_text = _docs.command_help(name)
    assert help_text.startswith(f"usage: goldenal {name} ")
    assert doc.splitlines()[0] in help_text


def test_plot_arguments_all_have_help():
    parser = _docs.command_parser("plot")
    missing = [a.dest for a in parser._actions if not (a.help or "").strip()]
    assert missing == []


def test_every_documented_command_is_a_section():
    text = _docs.render_cli_reference()
    names = _docs.available_commands()
    assert "plot" in names and "lookup" in names
    sections = [line[len("## goldenal "):] for line in text.splitlines()
                if line.startswith("## goldenal ")]
    assert sections == names
    assert "$ goldenal plot --help\nusage: goldenal plot [-h]" in text
    # each command lists its own exit codes; the top-level help points to them
    assert text.count("\nexit codes:\n") == len(names)
    assert "exit codes: 0 success, 2 usage error" in text


def test_every_command_lists_its_own_exit_codes():
    from goldenal.cli import exit_codes

    for name in _docs.available_commands():
        module = _module(name)
        assert hasattr(module, "EXIT_CODES"), f"goldenal {name}: no EXIT_CODES"
        help_text = _docs.command_help(name)
        assert help_text.rstrip().endswith(exit_codes(module).rstrip())
        listed = [line.split()[0] for line in exit_codes(module).splitlines()[1:]
                  if line[:3].strip().isdigit()]
        assert listed[0] == "0" and "2" in listed, name
    assert "  3    the cell exists" in _docs.command_help("measure")
    assert "  3  " not in _docs.command_help("lookup")


def test_render_is_independent_of_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    wide = _docs.render_cli_reference()
    monkeypatch.setenv("COLUMNS", "40")
    assert _docs.render_cli_reference() == wide


def test_cli_reference_is_current():
    path = ROOT / "docs" / "cli.md"
    assert path.exists(), "docs/cli.md is missing; run: python -m goldenal._docs --write"
    assert path.read_text(encoding="utf-8") == _docs.render_cli_reference(), (
        "docs/cli.md is out of date; run: python -m goldenal._docs --write")


def test_check_mode_reports_stale_file(tmp_path):
    stale = tmp_path / "cli.md"
    stale.write_text("# old\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "goldenal._docs", "--check", "--path", stale],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1
    assert proc.stderr == (f"{stale} is out of date; run: python -m goldenal._docs --write\n")
    proc = subprocess.run([sys.executable, "-m", "goldenal._docs", "--write", "--path", stale],
                          capture_output=True, text=True, cwd=ROOT)
    assert (proc.returncode, proc.stdout) == (0, f"{stale}\n")
    proc = subprocess.run([sys.executable, "-m", "goldenal._docs", "--check", "--path", stale],
                          capture_output=True, text=True, cwd=ROOT)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_no_help_text_swallows_a_line_continuation():
    """A backslash at the end of a line in a (non-raw) string joins the lines.

    In a docstring that is an example's ``\\`` continuation vanishing from
    --help (``--allow-simulated       --out run.png``); write ``\\\\`` instead.
    """
    import re
    import tokenize

    swallowed = re.compile(r"(?<!\\)(?:\\\\)*\\\n")
    offenders = []
    for path in sorted((ROOT / "goldenal").rglob("*.py")):
        with open(path, "rb") as fh:
            for tok in tokenize.tokenize(fh.readline):
                if tok.type != tokenize.STRING:
                    continue
                prefix = re.match(r"[A-Za-z]*", tok.string).group(0).lower()
                # '"""\' right after the opening quotes deliberately skips the first newline
                body = re.sub(r'^[A-Za-z]*("""|\'\'\')\\\n', "", tok.string)
                if "r" not in prefix and swallowed.search(body):
                    offenders.append(f"{path.relative_to(ROOT)}:{tok.start[0]}")
    assert offenders == []
    text = (ROOT / "docs" / "cli.md").read_text()
    assert not re.search(r"\S {6,}--", text.replace("\n  ", "\n")), "a joined example line"
    assert "--allow-simulated \\\n      --out run.png" in _docs.command_help("plot")
