"""The stub server of ``measure_stub.py`` as a process of its own, for ``measure --server-cmd``.

    python tests/measure_stub_server.py --port 8080 --k 3 [--engine llamacpp]

It prints one line when it listens and serves until SIGTERM (or SIGINT).
``--pid-file`` records its pid (a test checks it was stopped), ``--exit``
makes it exit with that status before listening, ``--no-health`` makes
``/health`` answer 503 for ever (a server that never gets ready), ``--stop-delay S``
makes it take S seconds to stop after SIGTERM.
"""

import argparse
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from measure_stub import StubServer  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--engine", default="llamacpp")
    parser.add_argument("--pid-file")
    parser.add_argument("--exit", type=int)
    parser.add_argument("--no-health", action="store_true")
    parser.add_argument("--stop-delay", type=float, default=0.0)
    args = parser.parse_args()
    if args.pid_file:
        with open(args.pid_file, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    if args.exit is not None:
        print(f"stub: cannot start (exit {args.exit})", flush=True)
        return args.exit
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stub = StubServer(args.engine, k=args.k, port=args.port)
    if args.no_health:
        stub.unhealthy = True
    print(f"stub {args.engine} K={args.k} listening on {stub.url}", flush=True)
    stop.wait()
    time.sleep(args.stop_delay)
    stub.stop()
    print("stub: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
