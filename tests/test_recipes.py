"""The recipe reader shared by inject and audit (goldenal.recipes)."""

from goldenal.recipes.env import env_file_values
from goldenal.recipes.shell import eval_paths, literal_variables, resolve


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
