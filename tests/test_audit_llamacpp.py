"""`goldenal audit` on scripts that start llama-server, run as a user runs it.

Regressions found on ``measurements/llamacpp-tiny-random-2026-12/make.sh``:

* a config without a knob was reported at the first line the audit replays
  (there ``here="$(cd ...)"``, line 25), not at the llama-server command;
  bisected by deleting lines, it takes only an assignment the command reads
  before a llama-server command whose K is not a literal;
* ``--spec-draft-n-max "$k"`` read as "no --spec-draft-n-max" (llama.cpp's
  default K=3) instead of a K that cannot be read, and
  ``LLAMA_ARG_SPEC_DRAFT_N_MAX=2`` not read as K at all;
* a llama.cpp knob outside an agentic path was skipped as "names a synthetic
  knob but never sets one";
* a script that measures its server with ``goldenal measure`` (real
  acceptance, the step that makes a golden curve) was asked whether it is
  agentic (GAL304).
"""

import subprocess
from pathlib import Path

import pytest

from conftest import goldenal_cmd

ROOT = Path(__file__).resolve().parents[1]
UNDECIDED = ("GAL304 cannot determine whether this spec-decode config (llamacpp, K={k}) is "
             "agentic or fixed-sequence-length: no benchmark type, isl/osl, recipe or variant "
             "name, or path says; an agentic one needs a synthetic knob")
ONE_INFO = ("Found 1 finding (0 errors, 0 warnings, 1 info).\n"
            "Checked 1 serve config in 1 file read; skipped 0 files.\n")


def audit(cwd, *args):
    p = subprocess.run([*goldenal_cmd(), "audit", "--no-cache", *args], capture_output=True,
                       text=True, cwd=cwd, timeout=120)
    return p.returncode, p.stdout, p.stderr


def write(tmp_path, text, name="serve.sh"):
    (tmp_path / name).write_text(text)
    return name


@pytest.mark.parametrize("text, line, k", [
    # what bisecting make.sh left: an assignment the command reads, then the server
    ('work=/tmp/w\n'
     'llama-server --model "$work/t.gguf" --spec-type draft-simple '
     '--spec-draft-model "$work/d.gguf"\n', 2, 3),
    # continued over lines after a blank line, K from a loop variable
    ('work=/tmp/w\n'
     '\n'
     'for k in 1 2 3; do\n'
     '    llama-server --model "$work/t.gguf" \\\n'
     '        --spec-draft-model "$work/d.gguf" --spec-draft-n-max "$k" &\n'
     'done\n', 4, "?"),
    # K in llama.cpp's environment spelling is read (it was taken for the default 3)
    ('export LLAMA_ARG_SPEC_DRAFT_N_MAX=2\n'
     'work=/tmp/w\n'
     'llama-server --model "$work/t.gguf" --spec-draft-model "$work/d.gguf"\n', 1, 2),
    # a literal K is where the config is reported, as before
    ('work=/tmp/w\n'
     'llama-server --model "$work/t.gguf" \\\n'
     '    --spec-draft-model "$work/d.gguf" \\\n'
     '    --spec-draft-n-max 2\n', 2, 2),
])
def test_knobless_config_is_reported_at_the_server_command(tmp_path, text, line, k):
    name = write(tmp_path, text)
    code, out, err = audit(tmp_path, name)
    assert (code, err) == (0, "")
    assert out == f"{name}:{line}:1: {UNDECIDED.format(k=k)}\n" + ONE_INFO


def test_knob_with_an_unread_k_is_not_checked_against_the_default(tmp_path):
    name = write(tmp_path, 'llama-server --model /m/t.gguf --spec-type draft-simple \\\n'
                           '    --spec-draft-model /m/d.gguf --spec-draft-n-max "$K" '
                           '--spec-synth-rates 0.5,0.2 &\n'
                           'vllm bench serve --base-url http://127.0.0.1:8080\n')
    code, out, err = audit(tmp_path, name)
    assert (code, err) == (0, "")
    assert out == (f"{name}:2:58: GAL304 cannot determine the golden cell for "
                   "--spec-synth-rates 0.5,0.2: K (--spec-draft-n-max is set, but not to a "
                   "literal number on this path)\n" + ONE_INFO)


def test_llamacpp_knob_outside_an_agentic_path_is_read(tmp_path):
    # llama.cpp's default K is 3: two rates are one short
    name = write(tmp_path, 'llama-server -m /m/t.gguf --spec-type draft-simple '
                           '--spec-draft-model /m/d.gguf \\\n'
                           '    --spec-synth-rates 1,0.83 &\n'
                           'vllm bench serve --base-url http://127.0.0.1:8080\n')
    code, out, err = audit(tmp_path, name)
    assert (code, err) == (1, "")
    assert out == (f"{name}:2:5: GAL207 --spec-synth-rates 1,0.83: rates must contain K=3 "
                   "values (the effective --spec-draft-n-max), got 2 (llama.cpp's default, no "
                   "--spec-draft-n-max); llama-server refuses to start\n"
                   "Found 1 finding (1 error, 0 warnings, 0 info).\n"
                   "Checked 1 serve config in 1 file read; skipped 0 files.\n")


SERVER = ('work=/tmp/w\n'
          'llama-server --model "$work/t.gguf" --spec-type draft-simple '
          '--spec-draft-model "$work/d.gguf" &\n')


def test_a_script_measuring_real_acceptance_is_not_asked_whether_it_is_agentic(tmp_path):
    name = write(tmp_path, SERVER + 'goldenal measure http://127.0.0.1:8080 --out run '
                                    '--model m --k 3 --thinking off\n')
    code, out, err = audit(tmp_path, name)
    assert (code, err) == (0, "")
    assert out == ("Found 0 findings (0 errors, 0 warnings, 0 info).\n"
                   "Checked 1 serve config in 1 file read; skipped 0 files.\n")


def test_goldenal_measure_in_a_comment_is_no_measurement(tmp_path):
    name = write(tmp_path, SERVER + '# then: goldenal measure http://127.0.0.1:8080 ...\n')
    code, out, _ = audit(tmp_path, name)
    assert (code, out) == (0, f"{name}:2:1: {UNDECIDED.format(k=3)}\n" + ONE_INFO)


def test_the_committed_measurement_script_audits_clean():
    code, out, err = audit(ROOT, "measurements/llamacpp-tiny-random-2026-12")
    assert (code, err) == (0, "")
    assert out.startswith("Found 0 findings (0 errors, 0 warnings, 0 info).\n"
                          "Checked 1 serve config in ")


SERVE = ('llama-server -m /m/t.gguf --spec-type draft-simple --spec-draft-model /m/d.gguf '
         '--spec-draft-n-max 3 \\\n')


@pytest.mark.parametrize("script, where, shown", [
    (SERVE + "    --spec-synth-len 4.5 &\n", "2:5", "--spec-synth-len 4.5"),
    (SERVE + "    --spec-synth-len=4.5 &\n", "2:5", "--spec-synth-len=4.5"),
    (SERVE + "    --spec-synth-len \\\n    4.5 &\n", "2:5", "--spec-synth-len 4.5"),
    ("export LLAMA_ARG_SPEC_SYNTH_LEN=4.5\n" + SERVE + "    &\n", "1:1",
     "LLAMA_ARG_SPEC_SYNTH_LEN=4.5"),
])
def test_messages_spell_the_knob_as_the_script_does(tmp_path, script, where, shown):
    name = write(tmp_path, script + "vllm bench serve --base-url http://127.0.0.1:8080\n")
    code, out, err = audit(tmp_path, name)
    assert (code, err) == (1, "")
    assert out == (f"{name}:{where}: GAL204 {shown} is outside [1, 4] for K=3; llama-server "
                   "refuses to start\n"
                   "Found 1 finding (1 error, 0 warnings, 0 info).\n"
                   "Checked 1 serve config in 1 file read; skipped 0 files.\n")


def test_each_branch_keeps_its_own_llamacpp_form(tmp_path):
    """Regression: branches shared one record of the forms set, so a length on one arm and
    rates on the other were reported on both as set together (GAL207)."""
    name = write(tmp_path, 'if [ "$MODE" = len ]; then\n'
                           '  llama-server -m /m/t.gguf --spec-draft-model /m/d.gguf '
                           '--spec-draft-n-max 3 --spec-synth-len 2.5 &\n'
                           'else\n'
                           '  llama-server -m /m/t.gguf --spec-draft-model /m/d.gguf '
                           '--spec-draft-n-max 3 --spec-synth-rates 0.8,0.6,0.4 &\n'
                           'fi\n'
                           'vllm bench serve --base-url http://127.0.0.1:8080\n')
    code, out, err = audit(tmp_path, name, "--format", "json")
    assert (code, err) == (0, "")
    assert "GAL207" not in out and "both set" not in out
