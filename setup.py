"""The one compiled module; everything else about the package is in pyproject.toml.

``goldenal.readers._logscan`` scans vLLM server logs in C.  It is optional:
where it cannot be built (no compiler), ``goldenal ingest`` reads each line in
Python instead, with the same results, several times slower on large logs.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("goldenal.readers._logscan", ["goldenal/readers/_logscan.c"],
                             optional=True, extra_compile_args=["-O3"])])
