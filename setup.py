"""The compiled modules; everything else about the package is in pyproject.toml.

``goldenal.readers._logscan`` scans vLLM server logs in C, and
``goldenal.recipes._shlex`` lexes shell text in C.  Both are optional: where
they cannot be built (no compiler), ``goldenal ingest`` reads each line and the
shell reader lexes in Python instead, with the same results, slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("goldenal.readers._logscan", ["goldenal/readers/_logscan.c"],
                             optional=True, extra_compile_args=["-O3"]),
                   Extension("goldenal.recipes._shlex", ["goldenal/recipes/_shlex.c"],
                             optional=True, extra_compile_args=["-O3"])])
