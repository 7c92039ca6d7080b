"""The recipe reader shared by inject and audit (goldenal.recipes)."""

import shlex

from hypothesis import given, settings, strategies as st

from goldenal.recipes.env import env_file_values
from goldenal.recipes.shell import (closing_paren, eval_paths, lex, literal_variables,
                                    open_quote, parse, quote_stack, remembered, remembering, resolve, shell_words,
                                    split_statements, strip_comment)


def test_env_file_key_after_blank_lines_is_on_its_own_line():
    # regression: the assignment pattern's leading blanks ran over blank lines,
    # so B was reported on line 2
    found = env_file_values("A=1\n\n  B=2\nexport C='2.5'\n")
    assert found == {"A": ("1", 1, 2, 3, ""), "B": ("2", 3, 9, 10, ""),
                     "C": ("2.5", 4, 20, 25, "'")}


def test_env_file_value_is_one_shell_word():
    assert env_file_values("K=x#y # note\n")["K"][0] == "x#y"


def test_literal_variables_first_assignment_wins_and_resolve_follows_them():
    text = 'AL="2.5"\nexport K=3\nAL=9\n  N=$(nproc)\n'
    variables = literal_variables(text)
    assert variables == {"AL": "2.5", "K": "3", "N": "$(nproc)"}
    assert [resolve(raw, variables) for raw in ('"$AL"', "${K}", "$N", "$MISSING", "4")] == [
        "2.5", "3", "$(nproc)", None, "4"]


def test_eval_paths_per_line():
    text = ("if [ \"$EVAL_ONLY\" = \"true\" ]; then\n  a\nelse\n  b\nfi\nc\n"
            "if [ -z \"$EVAL_ONLY\" ]; then x; fi\n")
    paths = eval_paths(text)
    assert [paths[n] for n in range(1, 8)] == [True, True, False, False, None, None, None]


# ------------------------------------------------------------------ the lexer

_ANY = st.text(alphabet="ab $()`'\"\\#;\n\t{}|&", max_size=40)
# the POSIX subset shlex reads as bash does: no $, backquotes or ; (bash resolves
# \$ and \` in double quotes, and ;# starts a comment); # only at a word's start
# (shlex ends a word at any #)
_POSIX = st.text(alphabet="ab \t'\"\\=-/.", max_size=30)


@settings(max_examples=200, deadline=None)
@given(_ANY)
def test_lex_tokens_tile_the_text(text):
    toks, stack, end = lex(text)
    assert end == len(text)
    assert [t[1] for t in toks] == ([0] + [t[2] for t in toks[:-1]] if toks else [])
    assert (toks[-1][2] if toks else 0) == len(text)
    assert all(t[1] < t[2] and t[3] >= 0 for t in toks)
    assert not stack or toks


@settings(max_examples=200, deadline=None)
@given(st.lists(_ANY, min_size=1, max_size=4))
def test_lex_line_by_line_ends_as_the_whole(chunks):
    text = "\n".join(chunks)
    stack = quote_stack(chunks[0], [])
    for chunk in chunks[1:]:
        stack = quote_stack("\n" + chunk, stack)
    assert stack == lex(text)[1]


@settings(max_examples=500, deadline=None)
@given(_ANY)
def test_open_quote_answers_as_the_lexer(text):
    assert open_quote(text) == bool(quote_stack(text, []))


def test_a_string_of_the_other_quote_after_a_closed_one_stays_open():
    # regression: an even count of each quote was taken to close every string, so the
    # string opened by the second quote here ended the line and its next line was read
    # as a command setting the knob
    assert open_quote("""X='a"b'"c""")
    assert open_quote('echo ")" $(foo')
    lines, _ = parse("""X='a"b'"c\nSGLANG_SIMULATE_ACC_LEN=2.5 d"\nY=1\n""")
    assert [(ln.no, ln.text) for ln in lines] == [
        (1, """X='a"b'"c\nSGLANG_SIMULATE_ACC_LEN=2.5 d\""""), (3, "Y=1")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab $()`'\"\\#;{}", min_size=1, max_size=8), min_size=1,
                max_size=5))
def test_shell_words_read_back_what_shlex_quoted(words):
    line = " ".join(shlex.quote(w) for w in words)
    assert shell_words(line) == words


@settings(max_examples=200, deadline=None)
@given(_POSIX)
def test_shell_words_agree_with_shlex_on_the_posix_subset(text):
    if not text.endswith("\\"):
        text += " #c 'd"        # a comment at a word's start
    try:
        expected = shlex.split(text, comments=True)
    except ValueError:      # an unclosed quote or a final backslash
        return
    assert shell_words(text) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab ()'\";", min_size=1, max_size=6), max_size=4),
       st.text(alphabet="ab )'\"", max_size=8))
def test_closing_paren_skips_quoted_parentheses(words, tail):
    inner = " ".join(shlex.quote(w) for w in words)
    text = "x=$(" + inner + ")" + tail
    assert closing_paren(text, 4) == len("x=$(" + inner + ")")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab ;#'\"$()", min_size=1, max_size=8), min_size=1,
                max_size=4))
def test_statements_split_only_at_unquoted_semicolons(words):
    quoted = [shlex.quote(w) for w in words]
    assert split_statements(" ; ".join(quoted)) == quoted
    assert strip_comment(" ".join(quoted) + " # note 'x") == " ".join(quoted) + " "


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(["a", " ", "\t", "\n", ";", ";;", "'", '"', "\\", "$", "$(",
                                 "(", ")", "`", "#", "{", "}", "x=1", "[ $X = y ]", "then",
                                 "'a;b'", '"c;d"', '"$V;"', "\\;", "\\\n"]),
                max_size=12).map("".join))
def test_statements_split_flat_as_the_lexer_splits(text):
    # the regex path taken for lines without nesting agrees with the lexer's, token for token
    from goldenal.recipes.shell import _flat_split_points, _lexed_split_points

    flat = _flat_split_points(text)
    if flat is not None:
        assert flat == _lexed_split_points(text)
        # flat: the lexer opens no context and sees no comment in it
        assert not [k for k, _, _, d in lex(text)[0]
                    if d or k in ("`", "#", '"', "$(", "sq+")]


_SHELL_BIT = st.sampled_from(["a", "b1", " ", "  ", "\t", "\n", "\r", ";", "'", '"', "\\", "$",
                              "$X", "${X:-a b}", "$(", "(", ")", "`", "#", "{", "}", "=", "-"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(_SHELL_BIT, max_size=12).map("".join))
def test_shortcuts_read_as_the_lexer_reads(text):
    # closing_paren's and shell_words' regex paths agree with the lexer wherever they answer
    assert closing_paren("$(" + text, 2) == lex("$(" + text, "$", 2, closing=True)[2]
    if "$" in text and "$(" not in text and not any(ch in text for ch in "'\"\\`#"):
        # a trailing '' (an empty word) sends the same words through the lexer
        assert shell_words(text) == shell_words(text + " ''")[:-1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_SHELL_BIT, max_size=12).map("".join), max_size=5))
def test_remembered_readings_answer_as_fresh_ones(texts):
    """Inside remembering(), words and the end of a ``$(`` are the fresh answers however often
    asked; a caller changing the list of words it got changes nothing remembered."""
    fresh = [(shell_words(t), closing_paren("$(" + t, 2)) for t in texts]
    with remembering():
        for _ in range(2):
            got = [(shell_words(t), closing_paren("$(" + t, 2)) for t in texts]
            assert got == fresh
            for words, _ in got:
                words.append("changed")


def test_remembering_lasts_for_the_outermost_block_only():
    asked = []

    @remembered
    def length(text):
        asked.append(text)
        return len(text)

    assert [length("ab"), length("ab")] == [2, 2] and asked == ["ab", "ab"]   # no block, no memo
    with remembering():
        assert [length("ab"), length("ab"), length("c")] == [2, 2, 1]
        with remembering():             # shares the open block's memo (an audit's scripts)
            length("ab")
        length("ab")
    assert asked == ["ab", "ab", "ab", "c"]
    length("ab")
    assert asked[-1:] == ["ab"] and len(asked) == 5
    with remembering():                 # a new outermost block starts afresh
        length("ab")
    assert len(asked) == 6


def test_lexer_nesting_and_escapes_examples():
    assert shell_words('a "b \\"c\\" \\$d \\x" \'e\\\'') == ['a', 'b "c" $d \\x', 'e\\']
    assert shell_words('v="$(printf "%s" ")")" w') == ['v=$(printf "%s" ")")', 'w']
    assert shell_words('echo `date "+%s"` "x`y z`"') == ['echo', '`date "+%s"`', 'x`y z`']
    assert shell_words('a#b "c"#d e #f') == ['a#b', 'c#d', 'e']
    assert split_statements('a; b "c;d" $(e; f); case x in 1) y;; esac') == [
        'a', 'b "c;d" $(e; f)', 'case x in 1) y', ';;', 'esac']
    assert quote_stack('x="$(echo `', []) == ['"', '$', '`']
    assert quote_stack("'", quote_stack("a 'b", [])) == []
