"""Bad input: handled, or refused with file:line and the reason; never a traceback.

Fixtures in tests/data/ingest/bad/ are built from the real club-3090 #46 and
vLLM #43295 / #7301 / #8620 lines (see tests/data/ingest/SOURCES.md).
"""

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldenal.cli import main
from goldenal.core.errors import ParseError
from goldenal.readers import ingest
from goldenal.readers.observations import ServerStart

DATA = Path(__file__).parent / "data" / "ingest"
BAD = DATA / "bad"
CLUB = [(331, 632, (255, 173, 109, 60, 35)), (337, 561, (256, 162, 83, 41, 19))]


def counts(obs):
    return [(o.drafts, o.accepted, o.accepted_per_position) for o in obs]


@pytest.mark.parametrize("name", ["crlf.log", "ansi.log", "non_utf8.log", "club3090_log.bin"])
def test_damaged_encodings_read_the_same_counts(name):
    obs = ingest(BAD / name)
    assert obs.complete
    assert counts(obs) == CLUB
    assert [o.timestamp for o in obs] == ["05-04 01:06:43", "05-04 01:06:53"]
    assert [o.extra["process"] for o in obs] == ["1", "1"]


def test_gzip_detected_by_magic_bytes(tmp_path):
    path = tmp_path / "server.log.gz"
    path.write_bytes(gzip.compress((DATA / "vllm_v1_43295.log").read_bytes()))
    assert [o.drafts for o in ingest(path)] == [3607, 3627]


def test_truncated_last_line_is_refused_with_its_line():
    obs = ingest(BAD / "truncated_last_line.log")
    assert counts(obs) == CLUB[:1]
    assert not obs.complete
    assert [str(p) for p in obs.problems] == [
        f"{BAD / 'truncated_last_line.log'}:4: truncated last line (no newline, fields missing)"]


def test_interleaved_processes_first_message_refused_second_read():
    obs = ingest(BAD / "interleaved.log")
    assert counts(obs) == CLUB[1:]
    assert obs[0].extra["process"] == "7" and obs[0].line == 2
    assert obs.problems[0].line == 2
    assert "interleaved output" in obs.problems[0].message


def test_per_position_length_disagreeing_with_k():
    obs = ingest(BAD / "list_vs_k.log")
    assert len(obs) == 0
    assert obs.problems[0].line == 3
    assert obs.problems[0].message == ("per-position list has 5 entries but the server runs "
                                       "num_speculative_tokens=4")
    assert obs.sources[0].facts["server_start"] == [ServerStart(
        2, 4, "num_speculative_tokens", "mtp", off="no rejection_sample_method='synthetic'")]


def test_k_hint_checked_against_the_list():
    obs = ingest(DATA / "vllm_v1_43295.log", k=3)
    assert len(obs) == 0 and obs.refused == 2


def test_counts_contradicting_the_printed_mean_report_the_line():
    obs = ingest(BAD / "contradict_mean.log")
    assert counts(obs) == CLUB[1:]
    (p,) = obs.problems
    assert p.line == 2
    assert p.message == (
        "counts contradict the printed mean: no step count reproduces every printed figure "
        "(printed mean 2.91; Accepted 832 / per-position sum 1.909 = 435.8 steps -> AL 2.909; "
        "Drafted 1655 / K=5 = 331 steps -> AL 3.514)")


def test_two_k_in_one_file_split_and_said():
    obs = ingest(BAD / "two_k.log")
    assert [o.k for o in obs] == [2, 5, 5]
    cells = {c.k: (c.steps, c.windows) for c in obs.summary()}
    assert cells == {2: (3607, 1), 5: (668, 2)}
    messages = [p.message for p in obs.problems]
    assert "server restarted with num_speculative_tokens=5 (was 2)" in messages
    assert ("metrics of 2 different K in one file: K=2 (lines 3-3), K=5 (lines 5-6); "
            "split into separate cells") in messages
    assert obs.complete


def test_v0_cumulative_counters_kept_per_process():
    obs = ingest(BAD / "v0_two_processes.log")
    # process 11: 5 then 15 draft tokens (K=5): windows of 1 and 2 steps, not mixed with 12
    assert [(o.extra["process"], o.drafts, o.draft_tokens) for o in obs] == [
        ("11", 1, 5), ("12", 161, 483), ("11", 2, 10)]


def test_truncated_json_refused():
    obs = ingest(BAD / "bench_truncated.json")
    assert len(obs) == 0
    assert obs.problems[0].message.startswith("not valid JSON")


def test_bench_without_spec_keys_says_why():
    obs = ingest(DATA / "bench_no_spec.json")
    assert "401 behind --api-key" in obs.problems[0].message


@pytest.mark.parametrize("name, message", [
    ("empty.log", "empty file"),
    ("garbage.bin", "not a recognised measurement format"),
])
def test_unreadable_files_raise_parse_error(name, message):
    with pytest.raises(ParseError, match=message):
        ingest(BAD / name)


def test_strict_raises_on_first_refusal():
    with pytest.raises(ParseError) as info:
        ingest(BAD / "contradict_mean.log", strict=True)
    assert info.value.line == 2


@pytest.mark.parametrize("name, rc, fragment", [
    ("truncated_last_line.log", 1, "truncated_last_line.log:4: truncated last line"),
    ("empty.log", 2, "empty.log: empty file"),
    ("garbage.bin", 2, "garbage.bin: not a recognised measurement format"),
    ("bench_truncated.json", 2, "bench_truncated.json:1: not valid JSON"),
])
def test_cli_never_tracebacks(capsys, name, rc, fragment):
    assert main(["ingest", str(BAD / name)]) == rc
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


line_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(line_text, max_size=12), st.binary(max_size=64))
def test_property_arbitrary_noise_around_spec_lines(tmp_path, noise, junk):
    """Any noise lines (and raw bytes) between real spec lines leave their counts intact."""
    club = [line for line in (DATA / "vllm_v1_club3090.log").read_text().splitlines()
            if "SpecDecoding metrics" in line]
    body = [n.replace("SpecDecoding", "Spec").replace("Speculative", "Spec")
            .replace("speculative_config", "x").replace("\n", " ").replace("\r", " ")
            for n in noise]
    data = ("\n".join(body[:6] + [club[0]] + body[6:] + [club[1]]) + "\n").encode()
    path = tmp_path / "noisy.log"
    path.write_bytes(junk.replace(b"\n", b" ") + b"\n" + data)
    try:
        obs = ingest(path)
    except ParseError:
        return  # junk first line may make the sniffer refuse the file: never a traceback
    assert counts(obs) == CLUB


@pytest.mark.parametrize("tail, complete", [
    ("Accepted: 262 tokens, Drafted: 295 tokens", True),
    ("Accepted: 262 tokens, Drafted: 29", False),
    ("Accepted: 262 tokens, Drafted: 295 tokens, Per-position acceptance rate: 0.983, 0.9", False),
])
def test_unterminated_last_line_accepted_only_when_provably_whole(tmp_path, tail, complete):
    path = tmp_path / "cut.log"
    path.write_bytes(("INFO 04-08 10:00:00 [metrics.py:86] SpecDecoding metrics: Draft "
                      "acceptance rate: 88.8%, " + tail).encode())
    obs = ingest(path, k=5)
    assert (len(obs) == 1) is complete
    assert obs.complete is complete


@pytest.mark.parametrize("quoted", ['"spec_verify_ct"', '"specDecodingStats"',
                                    '"total_draft_tokens" "total_accepted_tokens"',
                                    '"spec_decode_acceptance_rate"', '"num_spec_steps"'])
def test_other_engines_markers_quoted_in_a_vllm_log_do_not_change_its_reader(tmp_path, quoted):
    """Regression: a logged request body naming another format's key hid every spec line."""
    club = [line for line in (DATA / "vllm_v1_club3090.log").read_text().splitlines()
            if "SpecDecoding metrics" in line]
    path = tmp_path / "server.log"
    path.write_text(f"INFO request body: {{{quoted}: 1}}\n" + "\n".join(club[:2]) + "\n")
    assert counts(ingest(path)) == CLUB


def test_no_accepted_tokens_against_nonzero_rates_is_refused_not_a_crash(tmp_path):
    """Accepted 0 with rates above zero and Drafted not a multiple of K: a refusal."""
    path = tmp_path / "server.log"
    path.write_bytes(b"INFO 11-30 04:00:10 [metrics.py:101] SpecDecoding metrics: Mean "
                     b"acceptance length: 1.00, Accepted throughput: 0.00 tokens/s, Drafted "
                     b"throughput: 60.10 tokens/s, Accepted: 0 tokens, Drafted: 601 tokens, "
                     b"Per-position acceptance rate: 0.500, 0.000, 0.000, Avg Draft acceptance "
                     b"rate: 0.0%\n")
    obs = ingest(path)
    assert len(obs) == 0 and not obs.complete
    assert [str(p) for p in obs.problems] == [
        f"{path}:1: counts contradict the printed mean: no step count reproduces every "
        "printed figure (printed mean 1.0)"]


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_named_pipe_or_a_device_is_refused_not_waited_on(tmp_path, kind):
    """`goldenal ingest` on a FIFO waited forever for a writer, and on /dev/zero read
    without end: every reader opens its input through files.open_regular."""
    import os
    import subprocess
    import sys

    if kind == "fifo":
        path = tmp_path / "server.log"
        os.mkfifo(path)
    else:
        path = "/dev/zero"
    done = subprocess.run([sys.executable, "-m", "goldenal", "ingest", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"error: {path}: cannot read: is a device, pipe or socket, not a "
                           "regular file\n")
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "run.yaml")
    from goldenal.readers import load_run

    with pytest.raises(ParseError, match="no run.yaml and no collector files"):
        load_run(run)   # a run.yaml that is no regular file is no manifest


def test_a_malformed_bench_acceptance_length_is_refused_not_a_crash(tmp_path, capsys):
    """Regression: ``1.8.3`` matched the row pattern and raised ValueError."""
    path = tmp_path / "bench.txt"
    path.write_text("---------------Speculative Decoding---------------\n"
                    "Acceptance length:                       1.8.3\n"
                    "Drafts:                                  26407\n"
                    "Accepted tokens:                         22021\n"
                    "==================================================\n")
    obs = ingest(path)
    assert len(obs) == 0
    assert [str(p) for p in obs.problems] == [f"{path}:1: malformed Acceptance length '1.8.3'"]
    assert main(["ingest", str(path)]) == 2
    assert capsys.readouterr().err == f"error: {path}:1: malformed Acceptance length '1.8.3'\n"


def test_a_malformed_llamacpp_mean_len_is_refused_not_a_crash(tmp_path, capsys):
    """Regression (atheris): ``mean len =  1.7182.001`` matched the task line's
    ``[0-9.]+`` and raised ValueError; the other task is still read."""
    task = "0.00.{t}.749 I slot print_timing: id  0 | task {n} | "
    path = tmp_path / "server.log"
    path.write_text(
        task.format(t=428, n=1) + "draft acceptance = 0.26042 (   25 accepted /    96 "
        "generated), mean len =  1.76\n"
        + task.format(t=428, n=1) + "     acc per pos = (0.455, 0.212, 0.091)\n"
        + task.format(t=543, n=37) + "draft acceptance = 0.24242 (   24 accepted /    99 "
        "generated), mean len =  1.7182.001\n"
        + task.format(t=543, n=37) + "     acc per pos = (0.441, 0.176, 0.088)\n")
    obs = ingest(path)
    assert [(o.line, o.drafts, o.accepted) for o in obs] == [(1, 33, 25)]
    assert [str(p) for p in obs.problems] == [f"{path}:3: malformed mean len '1.7182.001'"]
    assert main(["ingest", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"refused: {path}:3: malformed mean len '1.7182.001'\n"
        "incomplete: 1 window(s) refused; the totals above are partial\n")


def test_an_impossible_v0_window_names_its_k(tmp_path):
    """Regression: the message printed a literal ``{k}``."""
    path = tmp_path / "v0.log"
    path.write_text("INFO 07-24 04:00:31 metrics.py:316] Speculative metrics: Draft acceptance "
                    "rate: 0.000, System efficiency: 5.882, Number of speculative tokens: 16, "
                    "Number of accepted tokens: 0, Number of draft tokens tokens: 160, "
                    "Number of emitted tokens tokens: 1000.\n")
    obs = ingest(path)
    assert len(obs) == 0
    assert obs.problems[0].message.endswith("impossible for K=16")
