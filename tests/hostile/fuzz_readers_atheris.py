"""Coverage-guided fuzzing of every measurement reader with atheris (where it installs).

Not part of the test suite (a campaign runs for as long as it is given):

    pip install atheris
    python tests/hostile/fuzz_readers_atheris.py -atheris_runs=200000 \\
        -max_len=65536 tests/data/ingest

The corpus directory seeds the mutations with the real samples.  A crash
is any exception other than ParseError: keep the input it writes
(``crash-<sha>``) in ``tests/hostile/crashers/`` and fix the reader.
"""

import os
import sys
import tempfile
import warnings

import atheris

with atheris.instrument_imports():
    from goldenal.core.errors import ParseError
    from goldenal.readers import ingest

_DIR = tempfile.mkdtemp(prefix="goldenal-fuzz-")
_PATH = os.path.join(_DIR, "input")


def one_input(data):
    with open(_PATH, "wb") as fh:
        fh.write(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = ingest([_PATH])
        except ParseError:
            return
    for problem in result.problems:
        assert str(problem).startswith(_PATH), str(problem)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
