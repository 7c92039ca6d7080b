"""Coverage-guided fuzzing of every measurement reader with atheris (where it installs).

Not part of the test suite (a campaign runs for as long as it is given):

    pip install atheris
    mkdir -p /tmp/goldenal-corpus
    python tests/hostile/fuzz_readers_atheris.py -atheris_runs=200000 \\
        -max_len=65536 /tmp/goldenal-corpus tests/data/ingest

libFuzzer adds every input that reaches new code to the *first* corpus
directory and only reads the others: the scratch directory comes first, the
real samples of ``tests/data/ingest`` after it, to seed the mutations.  The
script refuses a checked-in data directory in first place.  A crash is any
exception other than ParseError: keep the input it writes (``crash-<sha>``)
in ``tests/hostile/crashers/`` and fix the reader.
"""

import os
import sys
import importlib
import pkgutil
import tempfile
import warnings

import atheris

with atheris.instrument_imports():
    import goldenal.engines
    import goldenal.readers
    from goldenal.core.errors import ParseError
    from goldenal.readers import ingest

    # ingest imports each format's reader when it first meets one: import them
    # all here, or the coverage guidance would be blind to them
    for _package in (goldenal.readers, goldenal.engines):
        for _module in pkgutil.iter_modules(_package.__path__):
            importlib.import_module(f"{_package.__name__}.{_module.name}")

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


def _first_corpus(argv):
    return next((a for a in argv[1:] if not a.startswith("-")), None)


if __name__ == "__main__":
    first = _first_corpus(sys.argv)
    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if first and os.path.abspath(first).startswith(tests_dir + os.sep):
        sys.exit(f"error: {first} would receive the fuzzer's new inputs: "
                 "give a scratch corpus directory first (see the docstring)")
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
