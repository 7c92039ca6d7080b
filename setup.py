"""The compiled module; everything else about the package is in pyproject.toml.

``goldenal.readers._logscan`` scans vLLM server logs in C (about 12x the
line-by-line Python reader, docs/architecture.md).  It is optional: where it
cannot be built (no compiler), ``goldenal ingest`` reads each line instead,
with the same results, slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("goldenal.readers._logscan", ["goldenal/readers/_logscan.c"],
                             optional=True, extra_compile_args=["-O3"])])
