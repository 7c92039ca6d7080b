"""Rewrite serve configs in place so they carry the golden AL.

Every speculative site of each FILE gets its engine's knob: vLLM
speculative-config JSON strings or mappings (every worker role), SGLang and
TensorRT-LLM *_environment blocks (any indentation, anchors, aliases,
base/override files), a TensorRT-LLM extra-LLM-API YAML with the env file it
names (# env-file: PATH), ATOM command lines, and scripts that start vllm
serve (each literal --speculative-config JSON; one built in a variable is
refused where used), sglang.launch_server, trtllm-serve, atom.entrypoints or
llama-server (its length knob; with --distribution its rates, since llama.cpp
realises a bare length as a geometric schedule, as stderr notes).  Model, draft
head, method, variant, K and thinking mode are read as audit reads them; a
contradicting flag is refused (--thinking against e.g.
DYN_DEFAULT_THINKING_MODE: disabled names both).  With no thinking-mode signal
or --thinking, audit's assumption is used (the curve's only mode, else
thinking_on), with a warning.  Only changed values are rewritten, every other
byte kept; a second run changes nothing.

    goldenal inject recipes/*.yaml --thinking on            # rewrite in place
    goldenal inject recipe.yaml --thinking on --check       # exit 1 if a change is needed
    goldenal inject recipe.yaml --thinking on --diff        # print the change, write nothing
    goldenal inject config.yaml --thinking off --distribution   # vLLM rates from the curve
    goldenal inject serve.sh --thinking on --distribution min-variance   # llama.cpp rates

Drop-in for InferenceX's runner (SYNTHETIC_ACCEPTANCE(_LENGTH), MODEL_PREFIX,
NUM_SPEC_TOKENS, THINKING_MODE, FRAMEWORK, EVAL_ONLY from the environment):

    goldenal inject "${CONFIG_FILE%%:*}" --framework "$FRAMEWORK"

An explicit SYNTHETIC_ACCEPTANCE_LENGTH is checked against the config's
committed cell as audit checks it (refused on a mismatch unless --force);
SYNTHETIC_ACCEPTANCE_LENGTH_PREFILL / _DECODE / _AGGREGATED serve roles with
different K.  A value already golden stays as written ('2.5' stays '2.5').
--allow-non-agentic (or GOLDENAL_ALLOW_NON_AGENTIC=true) holds in both modes.

On any error no file is touched: every FILE is checked before any is written.
The FILEs' directories are locked before the first is read (a crashed write
there is put back first), so two goldenal writers never lose each other's work.

In Python: goldenal.inject(path, thinking="on", ...) -> InjectResult;
goldenal.inject_files(paths, thinking="on", ...) for several, all or nothing.
"""

EXIT_CODES = """\
  0  done, or nothing to do
  1  refused: no single golden cell, a flag contradicting the file, --check finding a
     change (a value to add, or a different value pinned: wherever audit reports
     GAL201)
  2  unreadable input (no speculative settings, a launch script of another engine,
     bad JSON, K missing, unknown framework, a key written twice, an env file outside
     the config's directory, not a regular file or over 1 MiB)
  3  the file already pins a different value (--force), or changed since it was read
     (another writer; run again)
"""

import sys

from goldenal.commands._selection import (add_distribution_argument, add_selection_arguments,
                                          given, golden_dir)
from goldenal.engines import ENGINES


def configure(parser):
    parser.add_argument("files", nargs="+", metavar="FILE", help="serve config files")
    parser.add_argument("--framework", metavar="F",
                        help="runner mode: dynamo-vllm, dynamo-sglang, dynamo-trtllm or an "
                             "engine (else $FRAMEWORK), selecting from the runner's environment")
    parser.add_argument("--engine", choices=ENGINES, help="refuse files for another engine")
    # model, head, variant and K are read from the file; flags that contradict it are refused
    add_selection_arguments(parser, model_flag=True, k_required=False, thinking_required=False)
    add_distribution_argument(parser)
    parser.add_argument("--rate", action="store_true", help="ATOM: write the rate knob (AL-1)/K")
    parser.add_argument("--env-file", metavar="PATH",
                        help="TensorRT-LLM extra-LLM-API YAML: the environment file to write")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 if a change is needed")
    mode.add_argument("--diff", action="store_true", help="print a unified diff; write nothing")
    parser.add_argument("--force", action="store_true",
                        help="overwrite a different value already pinned")
    parser.add_argument("--allow-non-agentic", action="store_true",
                        help="also write fixed-sequence-length (e.g. 8k1k) configs, else refused "
                             "(or $GOLDENAL_ALLOW_NON_AGENTIC=true; in runner mode too)")


def run(args):
    import os

    from goldenal.apply.inject import (NothingWritten, allow_non_agentic_from, inject_files,
                                       inject_runner)
    from goldenal.core.errors import UsageError

    if args.framework is not None:
        if len(args.files) != 1:
            raise UsageError("runner mode (--framework) takes one CONFIG_FILE")
        outcome = inject_runner(args.files[0], args.framework, golden_dir=golden_dir(args),
                                check=args.check, diff_only=args.diff, force=args.force,
                                allow_non_agentic=args.allow_non_agentic)
        if outcome.result is None:
            print(outcome.message, file=sys.stderr)
            return 0
        results = [outcome.result]
    else:
        options = given(args, "engine model k thinking draft curve variant distribution "
                              "env_file force check")
        allow = allow_non_agentic_from(os.environ) or args.allow_non_agentic
        try:
            results = inject_files(args.files, golden_dir=golden_dir(args), diff_only=args.diff,
                                   form="rate" if args.rate else None, allow_non_agentic=allow,
                                   **options)
        except NothingWritten as exc:
            if len(args.files) == 1:
                raise exc.errors[0][1] from None
            # one line per refused file (an OSError names its file); none was written
            for path, error in exc.errors:
                if isinstance(error, OSError):
                    error = f"{error.filename or path}: {error.strerror or error}"
                print(f"error: {error}", file=sys.stderr)
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
    for result in results:
        for warning in result.warnings:
            print(warning, file=sys.stderr)
        if args.diff and result.diff:
            sys.stdout.write(result.diff)
        print(result.message, file=sys.stderr)
    return 1 if args.check and any(r.needs_change for r in results) else 0
