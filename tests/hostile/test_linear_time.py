"""No hang and no blow-up: bounded shell arithmetic, linear time on pathological recipes.

Timing lives in ``benchmarks/hostile_shapes.py`` (time against size); here each
shape at the size the requirements name must finish within a generous limit
(a regression to quadratic or exponential time would take seconds to hours),
and a property test with a deadline pumps every pattern that sees recipe or
header text.
"""

import re
import signal
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from goldenal.golden.curvefile import parse_curve_text, parse_header
from goldenal.auditing import audit
from goldenal.engines import table as knobs
from goldenal.recipes.shell import ROOT, arith, condition_ids, parse
from hostile.shapes import REQUIRED, SCRIPTS, header_comment

LIMIT = 10.0  # seconds: quadratic versions of these take minutes


class _Slow(Exception):
    pass


def _within(seconds, fn, *args):
    def alarm(*_):
        raise _Slow(f"took more than {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("expr,value", [
    ("9**9**9**9", None), ("2**64", None), ("2**63", 2 ** 63), ("(" * 300 + "1" + ")" * 300, None),
    ("1e999", None), ("10/0", None), ("1+2*3", 7), ("-(3)", -3), ("2**0.5", 2 ** 0.5),
    ("9" * 5000, None), ("1+" * 3000 + "1", None)])
def test_shell_arithmetic_is_bounded(expr, value):
    assert _within(1.0, arith, expr) == value


@pytest.mark.parametrize("shape", sorted(SCRIPTS))
def test_pathological_recipes_audit_in_bounded_time(tmp_path, shape):
    path = tmp_path / f"{shape}.sh"
    path.write_text(SCRIPTS[shape](REQUIRED[shape]))
    findings = _within(LIMIT, audit, [str(path)])
    assert all(f.path.endswith(f"{shape}.sh") for f in findings)


def test_long_header_comments_parse_in_bounded_time():
    text = header_comment(REQUIRED["header_comment"])
    parsed = _within(LIMIT, parse_curve_text, text, "curve.yaml")
    assert parsed.cells == {"on": {3: "2.50"}}
    _within(LIMIT, parse_header, parsed.header)


def _patterns():
    """Module-level patterns that search recipe, config or header text."""
    from goldenal.golden import curvefile
    from goldenal.auditing import evidence, markdown, runner
    from goldenal.auditing import shell as lint_shell
    from goldenal.readers import prometheus
    from goldenal.recipes import env

    out = []
    for module in (curvefile, evidence, markdown, runner, lint_shell, prometheus, env):
        for name, value in sorted(vars(module).items()):
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                out.append((f"{module.__name__}.{name}", value))
    return out


PATTERNS = _patterns()
# characters that make up the patterns' own syntax and their usual neighbours
ALPHABET = sorted(set("".join(p.pattern for _, p in PATTERNS) + " \t=:\"'{}[]_-.,|$az19"))


def _words(regex):
    """The literal words of a pattern: pumping one of them is the usual way to blow one up."""
    return sorted(set(re.findall(r"[A-Za-z_]{2,}", regex.pattern))) or ["a"]


SEPARATORS = ["", "=", ":", " ", "\t", '="', "'", "{", "(", "-", "."]


# no shrinking: a quadratic pattern fails at its first slow example, in seconds
_PUMPING = settings(max_examples=300, deadline=None, derandomize=True,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow])


def _pump(data, pattern, sep, how, alphabet):
    name, regex = pattern
    word = data.draw(st.sampled_from(_words(regex)))
    if how == "word":        # EXTRA_INPUTS=EXTRA_INPUTS=...
        prefix, unit = "", word + sep
    elif how == "after-word":  # z_<tab><tab>...
        prefix, unit = word, sep or " "
    else:
        prefix = data.draw(st.text(st.sampled_from(alphabet), max_size=20))
        unit = data.draw(st.text(st.sampled_from(alphabet), min_size=1, max_size=3))
    text = prefix + unit * (20000 // len(unit))
    started = time.perf_counter()
    regex.search(text)  # (a regex search cannot be interrupted: it is timed, not limited)
    regex.findall(text)
    # a quadratic pattern takes seconds on 20,000 characters; linear ones milliseconds
    assert time.perf_counter() - started < 0.5, (name, prefix[:40], unit)


@_PUMPING
@given(data=st.data(), pattern=st.sampled_from(PATTERNS),
       sep=st.sampled_from(SEPARATORS), how=st.sampled_from(["word", "after-word", "any"]))
def test_every_pattern_is_linear_on_pumped_input(data, pattern, sep, how):
    _pump(data, pattern, sep, how, ALPHABET)


# every spelling of the knob table, with its value and without
KNOB_PATTERNS = [(f"recipes.knobs {row.engine} {row.name} ({row.form}, {part})", regex)
                 for row in knobs.SPELLINGS
                 for part, regex in (("pattern", row.pattern), ("head", row.head))]
KNOB_ALPHABET = sorted(set("".join(p.pattern for _, p in KNOB_PATTERNS) + " \t=:\"'{}[]_-.,|$az19#\\"))


@_PUMPING
@given(data=st.data(), pattern=st.sampled_from(KNOB_PATTERNS),
       sep=st.sampled_from(SEPARATORS + ["${", "=${", ' \\\n', "#", "'${"]),
       how=st.sampled_from(["word", "after-word", "any"]))
def test_every_knob_spelling_is_linear_on_pumped_input(data, pattern, sep, how):
    _pump(data, pattern, sep, how, KNOB_ALPHABET)


@pytest.mark.parametrize("line", [
    "x # " + "SGLANG_SIMULATE_ACC_LEN=1 " * 40000,          # every match in one comment
    "SGLANG_SIMULATE_ACC_LEN=1 " * 40000 + "# end",
    "--spec-synth-len " + "${" * 100000,
])
def test_knob_matches_on_one_long_line_take_linear_time(line):
    found = _within(LIMIT / 5, knobs.finditer, line, knobs.SPELLINGS)
    assert len(found) == (0 if line.startswith("x #") else
                          1 if line.startswith("--") else 40000)


@pytest.mark.parametrize("depth", [3, 400])
def test_line_paths_share_their_prefix_and_read_as_their_steps(depth):
    """Each line's path is its enclosing (condition, arm) steps, built in constant time."""
    text = "".join(f'if [[ "$V{i}" == 1 ]]; then\n  X{i}=1\nelif [[ -n "$W" ]]; then\n'
                   for i in range(depth)) + "K=3\n" + "fi\n" * depth
    lines, conds = parse(text)
    assert len(conds) == depth
    inner = next(ln for ln in lines if ln.text == "K=3")
    assert inner.path.steps() == tuple((i, 1) for i in range(depth))
    assert inner.path == tuple((i, 1) for i in range(depth)) and len(inner.path) == depth
    x2 = next(ln for ln in lines if ln.text.strip() == "X2=1")
    assert x2.path.steps() == ((0, 1), (1, 1), (2, 0))
    assert x2.path.parent.parent is next(ln for ln in lines if ln.text.strip() == "X1=1"
                                         ).path.parent      # (0, 1), shared
    wanted = {0, 2, depth - 1}
    assert inner.path.among(wanted) == tuple((i, 1) for i in sorted(wanted))
    assert inner.path.among(wanted) is inner.path.among(wanted)     # remembered
    assert condition_ids([x2.path, inner.path]) == set(range(depth))
    assert conds[2].path.steps() == ((0, 1), (1, 1)) and ROOT.steps() == ()


def _blocks():
    """Random nested ``if``/``elif``/``else`` and ``case`` blocks with assignments as leaves."""
    leaf = st.just(("leaf",))

    def extend(inner):
        arms = st.lists(st.lists(inner, min_size=1, max_size=3), min_size=1, max_size=3)
        return st.one_of(
            st.tuples(st.just("if"), arms, st.booleans()),        # (kind, arms, has else)
            st.tuples(st.just("case"), arms))
    return st.lists(st.recursive(leaf, extend, max_leaves=12), min_size=1, max_size=4)


def _render(blocks):
    """The script of ``blocks`` and, per assignment, the (condition, arm) steps enclosing it."""
    out, expected, counter = [], {}, [0]

    def emit(items, path, indent):
        for item in items:
            pad = "  " * indent
            if item[0] == "leaf":
                name = f"X{len(expected)}"
                expected[name] = tuple(path)
                out.append(f"{pad}{name}=1")
                continue
            cid = counter[0]
            counter[0] += 1
            if item[0] == "if":
                _, arms, has_else = item
                for arm, body in enumerate(arms):
                    if arm == 0:
                        out.append(f'{pad}if [[ "$C{cid}" == {arm} ]]; then')
                    elif has_else and arm == len(arms) - 1:
                        out.append(f"{pad}else")
                    else:
                        out.append(f'{pad}elif [[ "$C{cid}" == {arm} ]]; then')
                    emit(body, path + [(cid, arm)], indent + 1)
                out.append(f"{pad}fi")
            else:
                _, arms = item
                out.append(f'{pad}case "$C{cid}" in')
                for arm, body in enumerate(arms):
                    out.append(f"{pad}  p{arm})")
                    emit(body, path + [(cid, arm)], indent + 2)
                    out.append(f"{pad}    ;;")
                out.append(f"{pad}esac")

    emit(blocks, [], 0)
    return "\n".join(out) + "\n", expected


@settings(max_examples=200, deadline=None, derandomize=True)
@given(_blocks())
def test_every_line_path_is_the_arms_enclosing_it(blocks):
    text, expected = _render(blocks)
    lines, conds = parse(text)
    got = {ln.text.strip().split("=")[0]: ln.path.steps() for ln in lines
           if ln.text.strip().startswith("X")}
    assert got == expected
    for ln in lines:
        ids = {cid for cid, _ in expected.get(ln.text.strip().split("=")[0], ())} | {0}
        assert ln.path.among(ids) == tuple(s for s in ln.path.steps() if s[0] in ids)
    assert condition_ids(ln.path for ln in lines) == {
        cid for path in expected.values() for cid, _ in path}


# llama-server command words: the pattern below retried its \S* from every
# position of a long word (a 120 KB word took 23 s to inject); server_spans finds
# the same spans in linear time
_SERVER_PATTERN = re.compile(r"(?<![\w.-])(?:\S*/)?llama-server(?![\w.-])")


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["llama-server", "/", "=", "a", ".", "-", " ", "\n", '"', "_",
                                 "$", "{", "}", "llama-servers", "#", "é"]), max_size=30))
def test_server_spans_are_the_spans_of_the_command_word_pattern(parts):
    from goldenal.engines.llamacpp import server_spans

    text = "".join(parts)
    assert server_spans(text) == [m.span() for m in _SERVER_PATTERN.finditer(text)]


@pytest.mark.parametrize("word", ["llama=" * 40000, "a/" * 120000, "llama-server=" * 20000,
                                  "/llama-server" * 20000])
def test_llama_server_commands_are_found_in_linear_time(word):
    from goldenal.engines.llamacpp import commands

    text = "#!/bin/bash\nX=" + word + "\nllama-server -m /models/m.gguf --spec-draft-n-max 3\n"
    found = _within(LIMIT / 5, commands, text)
    assert found[-1].start == text.index("\nllama-server") + 1


def _naive_command_end(text):
    end = 0
    while "\n" in text[end:]:
        nl = text.index("\n", end)
        if not text[end:nl].rstrip(" \t").endswith("\\"):
            return nl
        end = nl + 1
    return len(text)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["llama-server", " ", "\t", "\\", "\n", "a", "-c 1"]),
                max_size=30))
def test_a_command_ends_where_its_backslash_continuations_end(parts):
    from goldenal.engines.llamacpp import commands

    text = "llama-server " + "".join(parts)
    assert commands(text)[0].end == _naive_command_end(text)


def test_a_long_continued_llama_server_command_is_read_in_linear_time():
    # the end of a command's logical line was found by re-reading the text before each
    # continuation: these 200,000 continuations took 25 s, now under 2 s
    from goldenal.engines.llamacpp import commands

    text = "llama-server -m m.gguf \\\n" + "  --spec-type draft \\\n" * 200000 + "  -c 1\nnext\n"
    (cmd,) = _within(LIMIT, commands, text)
    assert cmd.end == text.index("\nnext")


# Prometheus web-UI rows: the pattern below backtracked quadratically (a 40,000-
# character line took 5 s to refuse; a 16 MiB one would take days)
_UI_PATTERN = re.compile(r"^(\S+\{.*\})\s*\|\s*(\S+)\s*$")


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["{", "}", "|", " ", "\t", "a", "=", '"', "1", "vllm:x"]),
                max_size=16).map("".join).map(str.strip))
def test_ui_rows_are_what_the_row_pattern_matches(text):
    from goldenal.readers.prometheus import ui_row

    m = _UI_PATTERN.match(text)
    assert ui_row(text) == (m.groups() if m else None)


def test_a_long_prometheus_line_is_refused_in_linear_time_with_a_short_message(tmp_path):
    from goldenal.core.errors import ParseError
    from goldenal.readers.prometheus import Scrape

    path = tmp_path / "m.prom"
    path.write_text("# TYPE atom:mtp_x counter\natom:mtp_x{" + "a{" * 400000 + "\n")
    with pytest.raises(ParseError) as info:
        _within(LIMIT / 5, Scrape, path)
    assert str(info.value).startswith(f"{path}: not a valid Prometheus text exposition: ")
    assert len(str(info.value)) < 300 + len(str(path))


def test_a_logical_line_of_many_continuations_is_searched_in_linear_time():
    """The evidence words are found in one pass: no rescan of the blank lines that follow each
    line start (as ``^\\s*model:`` under ``(?m)`` once did)."""
    from goldenal.auditing.shell import _hit_lines

    for text in ("DRAFT" + "\n" * 200000, "x" + " \\\n" * 100000):
        _within(LIMIT / 10, _hit_lines, text)
    assert _hit_lines("a\n  \t model: x") == {2} and _hit_lines("models:") == set()


@pytest.mark.parametrize("piece,n", [("--flag x", 100000), ("'a # #' \"$(c)\" \\\\", 100000),
                                     ("'a # b' \"$(c)\" #", 20000)])
def test_a_logical_line_of_many_continuations_is_joined_in_linear_time(piece, n):
    """Each continuation is read once and the line joined once (a join per continuation
    copied the line so far and re-read it for a comment: minutes at this size)."""
    text = "run \\\n" + f"  {piece} \\\n" * n + "  --end\nnext\n"
    # linear: about 2.5 s of CPU for the quoted piece in the Python lexer; quadratic: 42 s
    lines, _ = _within(LIMIT, parse, text)
    first = lines[0]
    if piece.endswith("#"):     # the first comment ends the line: its backslash joins nothing
        assert (first.no, first.end) == (1, 2) and len(lines) == n + 2
        assert lines[1].text == "  'a # b' \"$(c)\" " and lines[-2].text == "  --end"
    else:
        assert (first.no, first.end) == (1, n + 2)
        assert first.text == "run  " + f"{piece}  " * n + "--end"
        assert [ln.text for ln in lines[1:]] == ["next"]
