"""The audit rule catalogue: one entry per code (``GAL1xx`` registry, ``GAL2xx``
values, ``GAL3xx`` recipes and evidence), each with its ``--explain`` page."""

import re
from typing import NamedTuple

from goldenal.core.errors import printable
from goldenal.engines import record, table as knobs


class Rule(NamedTuple):
    """One audit rule and its page (sections as printed by ``--explain``)."""

    code: str
    name: str
    severity: str
    summary: str
    what: str
    why: str
    example: str
    use_instead: str
    fix_safety: str


_RULES = [
    Rule("GAL101", "model-without-curve", "warning",
         "A synthetic knob serves a model, draft head or variant that has no committed curve.",
         "Flags a synthetic-acceptance value on a config whose model (or draft head, or draft "
         "sampling variant) matches no curve of the golden registry, when no comment near the "
         "knob states where the value comes from.",
         "Policy rule 5: when a model has no committed curve nobody guesses. A value borrowed "
         "from another head or model looks plausible and silently sets the benchmark's "
         "acceptance target.",
         "# vLLM, model with no curve\n"
         "--speculative-config '{\"method\":\"eagle3\",\"model\":\"acme/Foo-EAGLE3\","
         "\"num_speculative_tokens\":3,\"rejection_sample_method\":\"synthetic\","
         "\"<vllm:length>\":2.8}'",
         "# AL source: pending collection run (link), measured with real verification\n"
         "...same config...",
         "No automatic fix: the value's source must be supplied by a person."),
    Rule("GAL102", "cell-not-committed", "error",
         "The curve exists but has no committed value for this thinking mode and K.",
         "Flags a knob whose curve has no cell (or an N/A cell) for the served thinking mode "
         "and K.",
         "Policy rule 1: only committed cells may be used; no interpolation, extrapolation or "
         "fallback to another thinking mode.",
         "# glm-5.2 curve has only thinking_on\n"
         "--default-chat-template-kwargs '{\"enable_thinking\": false}'\n"
         "export <sglang:length>=2.99",
         "Serve a thinking mode and K the curve covers, or collect the missing cell first.",
         "No automatic fix."),
    Rule("GAL201", "golden-value-mismatch", "error",
         "The synthetic value differs from the committed golden cell of the served config.",
         "Compares the knob's value, converted to an acceptance length, with the golden cell "
         "for the served model, draft head, sampling variant, thinking mode and K, at the "
         "precision the file writes (a rate rounded from the golden one to the decimals "
         "written is the golden value). When the value equals a cell of another curve or K, "
         "the message names that cell. When the cell cannot be decided (sampling variant, "
         "thinking mode, agentic or not), a value that matches no candidate cell is wrong "
         "whichever applies, and the message names the candidates.",
         "Policy rules 1 and 2: the value must come from the curve of the draft head and "
         "thinking mode actually served, at the K actually drafted. A value for another K or "
         "head changes the acceptance target and makes results incomparable.",
         "# serves the GQA head at K=3\n"
         "\"model\":\"Inferact/MiniMax-M3-EAGLE3-GQA\",\"num_speculative_tokens\":3,\n"
         "\"<vllm:length>\":2.83   # minimaxm3_eagle3 (non-GQA) thinking_on K=3",
         "\"<vllm:length>\":2.78   # minimaxm3_eagle3_gqa thinking_on K=3",
         "Safe when the served config was resolved without assumptions: the fix replaces the "
         "literal with the expected value."),
    Rule("GAL202", "trtllm-not-al-minus-one", "error",
         "A TensorRT-LLM forced-acceptance value equals the golden AL instead of AL - 1.",
         "Flags `<trtllm:length>` set to the golden AL itself.",
         "TensorRT-LLM counts forced accepted drafts, excluding the target's own token, so "
         "the knob takes AL - 1. The AL itself overshoots the target by one token per step.",
         "<trtllm:length>: \"2.78\"   # golden AL 2.78",
         "<trtllm:length>: \"1.78\"",
         "Safe: the fix writes AL - 1 with exact decimal arithmetic."),
    Rule("GAL203", "atom-rate-inconsistent-with-k", "error",
         "An ATOM acceptance rate was computed for another K than the one served.",
         "Flags `<atom:rate>` whose implied length 1 + K*rate misses the "
         "golden cell while (AL - 1)/K' for another K' matches it.",
         "ATOM converts the rate with the served K; a rate derived with another K encodes a "
         "different acceptance length.",
         "<atom:k> 2 <atom:rate> 0.663333   # (2.99-1)/3",
         "<atom:k> 2 <atom:length> 2.50",
         "Safe: the fix writes the length form, which needs no conversion."),
    Rule("GAL204", "value-out-of-range", "error",
         "The acceptance length lies outside [1, K+1] (rate outside [0, 1]).",
         "Flags a knob whose implied acceptance length is below 1 or above K+1 for the K "
         "served (or an ATOM/vLLM rate outside [0, 1]).",
         "vLLM and ATOM refuse to start; SGLang and TensorRT-LLM clamp silently, so the run "
         "measures K+1 (or real acceptance) instead of the target.",
         "<sglang:k> 1\n<sglang:length>: '2.5'",
         "<sglang:k> 2\n<sglang:length>: '2.5'",
         "No automatic fix: either K or the value is wrong."),
    Rule("GAL205", "synthetic-method-missing", "error",
         "A vLLM synthetic length or rates are set without `rejection_sample_method: synthetic`.",
         "Flags `<vllm:length>`/`<vllm:rates>` in a speculative "
         "config whose `rejection_sample_method` is absent or not `synthetic`.",
         "vLLM only uses the synthetic fields with the synthetic rejection sampler; without it "
         "the run refuses to start or simulates nothing.",
         "'{\"method\":\"mtp\",\"num_speculative_tokens\":3,\"<vllm:length>\":2.49}'",
         "'{\"method\":\"mtp\",\"num_speculative_tokens\":3,\"rejection_sample_method\":"
         "\"synthetic\",\"<vllm:length>\":2.49}'",
         "Safe: the fix adds the key."),
    Rule("GAL206", "knob-not-honoured", "error",
         "The served engine cannot honour the knob as written, so the run measures something else.",
         "Flags knobs the engine version or path ignores or rejects: `<vllm:length>` "
         "on a vLLM image older than 0.20 (or the 0.19 scalar rate on a newer one); a fractional "
         "TensorRT-LLM value on the two-model path (parsed as an integer: off); a TensorRT-LLM "
         "value of 0 (off); SGLang `real-draft-token` with `speculative-eagle-topk` other than 1; "
         "ATOM acceptance flags without `--method`; llama.cpp `<llamacpp:length>`/`-rates` on a "
         "`llama-server` without speculative decoding (it refuses to start).",
         "Each of these silently disables or distorts forced acceptance (engine facts in "
         "docs/engines.md §6), so the benchmark reports real or wrong acceptance as if it were "
         "golden.",
         "<trtllm:one_model>: false\n<trtllm:length>: \"1.78\"",
         "<trtllm:one_model>: true\n<trtllm:length>: \"1.78\"",
         "No automatic fix: the engine image or launch path must change."),
    Rule("GAL207", "synthetic-rates-invalid", "error",
         "llama.cpp synthetic acceptance rates that llama-server refuses at start-up.",
         "Flags `<llamacpp:rates>` (or `<llamacpp:rates:env>`) whose list does not "
         "hold exactly K values (K = `<llamacpp:k:flag>`, default 3), or holds a value "
         "outside [0, 1], or rises from one position to the next; and rates set beside a "
         "length (`<llamacpp:length>` / `<llamacpp:length:env>`), which llama-server "
         "refuses as mutually exclusive.",
         "The rates are unconditional survival probabilities, one per draft position; "
         "llama-server checks them when it initialises speculative decoding and exits, so "
         "the benchmark never starts (or starts from another launch path than intended).",
         "<llamacpp:k:flag> 3 <llamacpp:rates> 1,0.83",
         "<llamacpp:k:flag> 3 <llamacpp:rates> 1,0.83,0   # goldenal emit --engine llamacpp "
         "--distribution min-variance",
         "No automatic fix: K or the rates are wrong."),
    Rule("GAL301", "missing-synthetic-knob", "error",
         "An agentic spec-decode config has no synthetic-acceptance knob.",
         "Flags agentic benchmark configs that enable speculative decoding but set no "
         "synthetic knob on the throughput path.",
         "Policy rule 3: agentic spec-decode results are compared at the golden AL; real "
         "acceptance makes them depend on draft-head quality and dataset luck.",
         "<sglang:method> EAGLE <sglang:k> 3   # agentic, no knob",
         "export <sglang:length>=2.99   # glm-5.2 thinking_on K=3",
         "No automatic fix (use `goldenal inject`)."),
    Rule("GAL302", "knob-on-non-agentic", "error",
         "A synthetic knob is set on a fixed-sequence-length (non-agentic) config.",
         "Flags synthetic-acceptance knobs on configs that are not agentic (e.g. `8k1k`, "
         "`fixed-seq-len` scenarios).",
         "Policy rule 3: non-agentic configs measure real acceptance unless an exception is "
         "documented.",
         "fixed-seq-len:\n  - additional-settings: [\"SYNTHETIC_ACCEPTANCE=true\"]",
         "Remove the knob, or document the exception and suppress with "
         "`# goldenal: ignore[GAL302]`.",
         "No automatic fix."),
    Rule("GAL303", "knob-on-eval-path", "error",
         "A synthetic knob is active on an eval-only (accuracy) path.",
         "Flags knobs that stay set when `EVAL_ONLY=true`, either in the eval branch itself or "
         "unguarded in a script that runs evaluations.",
         "Policy rule 4: forced acceptance emits tokens regardless of the target, so accuracy "
         "evaluations score near zero.",
         "export <sglang:length>=2.99\n...\nif [ \"$EVAL_ONLY\" = true ]; then run_eval; fi",
         "if [ \"${EVAL_ONLY:-false}\" != \"true\" ]; then\n"
         "    export <sglang:length>=2.99\nfi",
         "No automatic fix."),
    Rule("GAL304", "cell-undeterminable", "info",
         "The audit could not determine which golden cell applies.",
         "Reports a spec-decode config for which a piece of the cell (model, K, draft head, "
         "thinking mode) could not be read from the files; the message names the missing piece. "
         "That includes whether the config is agentic or fixed-sequence-length: with no "
         "benchmark settings, client lengths, recipe or variant name, path or master config "
         "scenario saying, a knob is not compared with any golden cell (an agentic config "
         "needs the golden value, a fixed-sequence-length one no knob at all). "
         "A value that a candidate cell carries is named with that cell; one that no candidate "
         "carries is GAL201. "
         "A config without a knob is reported at the line that switches speculative decoding on "
         "(or sets K); one whose script measures it with `goldenal measure` is not reported: "
         "real acceptance is what a measurement run is for.",
         "A reviewer must check these by hand; the audit does not guess.",
         "--speculative-config \"$SPEC_CONFIG\"   # built elsewhere",
         "Spell K and the draft head where the audit can read them; say agentic or "
         "fixed-sequence-length by the path (`agentic/`, `fixed-seq-len/`), the benchmark "
         "settings or the master config scenario that runs the file.",
         "No fix."),
    Rule("GAL305", "thinking-mode-assumed", "info",
         "No thinking-mode signal was found; a default was assumed.",
         "Reports configs with no chat-template kwargs, thinking template, thinking variable, "
         "Dynamo default thinking mode or client extra input, and names the default assumed "
         "(the curve's only mode, or the documented default THINKING_MODE=thinking_on).",
         "The thinking mode selects the curve row; an unstated mode hides a possible mismatch.",
         "<vllm:launch> MODEL --speculative-config ...   # no chat-template kwargs",
         "--default-chat-template-kwargs '{\"enable_thinking\": true}'",
         "No fix."),
    Rule("GAL306", "unreadable-input", "warning",
         "A file that mentions a knob could not be read or parsed.",
         "Reports files skipped because they are binary, unreadable, broken YAML/JSON, or "
         "reached through a symlink loop or a link leading outside the audited root. A recipe "
         "(a YAML with `backend:`, or `roles:` beside `engine:` or `schema:`) or a serve "
         "config (a YAML, JSON or launcher with speculative settings) that does not parse is an **error**, so the audit exits 1; "
         "other files that only mention a knob are a warning.",
         "A recipe the audit cannot read is a recipe nobody checked.",
         "speculative-config: '{\"method\": \"mtp\",'   # truncated JSON",
         "Fix the file so its engine can parse it.",
         "No fix."),
    Rule("GAL307", "referenced-recipe-missing", "info",
         "A master-config entry sets synthetic acceptance for a recipe that is not in the tree.",
         "Reports `<runner:length>` entries whose `CONFIG_FILE` recipe cannot be "
         "found, so K and the draft head cannot be checked.",
         "The value can only be checked against the K and head the recipe serves.",
         "- \"<runner:length>=2.27\"\n- \"CONFIG_FILE=recipes/vllm/x/missing.yaml\"",
         "Commit the recipe next to the master config.",
         "No fix."),
    Rule("GAL309", "knob-found-not-checked", "warning",
         "A synthetic knob is set in a file, but no serve config around it could be checked.",
         "Reports each place a knob is given a value when the audit found no serve config to "
         "check it against there: the command around it could not be read (built at run time, "
         "in a documentation format the audit does not read), or the file's layout is unknown.",
         "A knob nobody checked may pin a value no curve has; silence would read as a pass.",
         "<!-- docs/guide.rst -->\n.. code-block:: bash\n\n   <atom:rate> 0.77",
         "Keep launch commands in scripts or fenced Markdown blocks the audit reads, or "
         "suppress with `# goldenal: ignore[GAL309]` after checking the value by hand.",
         "No fix."),
    Rule("GAL310", "knob-on-non-benchmark-server", "warning",
         "A synthetic knob is set on a server that no benchmark client drives.",
         "Flags a knob in a launcher that starts a server but is neither in a benchmark "
         "directory nor runs a benchmark client (a demo, chat or playground server).",
         "Forced acceptance emits tokens the target never verified: a server real users talk "
         "to answers with invalid output.",
         "# demo/chat_server.sh\nexport <sglang:length>=2.99\n"
         "python3 -m sglang.launch_server <sglang:model> nvidia/GLM-5.2-NVFP4 ...",
         "Remove the knob from servers that are not benchmarked, or keep the launcher with the "
         "benchmark that drives it.",
         "No fix."),
    Rule("GAL311", "variant-from-citation", "info",
         "The engine cannot select a sampling variant; a comment citing a curve decided it.",
         "Reports a config whose engine has no setting that selects among a draft head's "
         "sampling variants (ATOM with DSpark), where a comment next to the knob names one "
         "curve (its id, file name or URL): the value is checked against that curve.",
         "The value's source is stated, not served: a reviewer should know the variant came "
         "from a comment. Without such a comment the cell cannot be determined (GAL304).",
         "# kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method K=2\n"
         "<atom:length> 2.51",
         "Keep the citation next to the knob.",
         "No fix."),
    Rule("GAL312", "duplicate-key", "error",
         "A recipe or serve config names one key twice in a mapping.",
         "Flags the second of two equal keys in one YAML mapping (an environment block, a "
         "worker's engine settings, a `speculative_config`, any mapping of the file) or in a "
         "speculative-config JSON object, at the line of the repeat, naming the line of the "
         "first. The file's other settings are not checked until it is fixed.",
         "The engines' YAML and JSON loaders keep the last of two equal keys, silently, so the "
         "value served is the one further down, while a reader that stops at the first (a "
         "person, a grep) checks the wrong value. `inject` refuses such a file for the same "
         "reason: it would write the value for the K it read, not the K the engine runs.",
         "decode_environment:\n  <sglang:length>: '2.99'\n  SGLANG_REASONING_EFFORT: "
         "high\n  <sglang:length>: '3.50'   # the one SGLang reads",
         "decode_environment:\n  <sglang:length>: '2.99'\n  SGLANG_REASONING_EFFORT: "
         "high",
         "No fix: which of the two values was meant is for a person to decide."),
    Rule("GAL313", "knob-in-serving-example", "warning",
         "Documentation shows synthetic acceptance in a serve command that no benchmark runs.",
         "Flags a knob in a fenced shell block of a Markdown document that is not a recipe "
         "(a README, a `docs/` page, a chatbot or production guide) when the block's section "
         "starts a server (an engine's serve command or a `docker run`), runs no benchmark "
         "client, and neither its headings nor the path say agentic or fixed-sequence-length. "
         "Launch scripts with the same problem are GAL310. Every finding in such documentation "
         "is at most a warning: an example is not a recipe a runner executes.",
         "Forced acceptance emits unverified tokens: the server accepts draft tokens whatever "
         "the target model says, so real users copying the command get output nobody verified.",
         "# docs/chatbot.md, section \"Serve the chatbot\"\n"
         "export <sglang:length>=2.99\n"
         "python3 -m sglang.launch_server <sglang:model> zai-org/GLM-5.2 ...",
         "python3 -m sglang.launch_server <sglang:model> zai-org/GLM-5.2 ...   # no knob\n"
         "# or a benchmark recipe: the agentic client in the same section as the server",
         "No fix: whether the example is a benchmark recipe is for its author to say."),
    Rule("GAL308", "unused-suppression", "warning",
         "An inline `goldenal: ignore[...]` comment matches no finding.",
         "Flags suppression comments whose codes suppress nothing on their line. The syntax "
         "quoted in documentation (Markdown outside fenced shell blocks, a Python string) "
         "still suppresses but is never reported unused.",
         "Stale suppressions hide future mistakes on that line.",
         "<sglang:length>: '2.99'   # goldenal: ignore[GAL201]   (value is golden)",
         "<sglang:length>: '2.99'",
         "Safe: the fix removes the comment."),
]


def _spelled(text):
    # knob names and launch commands in the pages come from the engine records
    return _PLACEHOLDER.sub(lambda m: record(m[1]).launch_word if m[2] == "launch" else
                            knobs.spellings(m[1], setting=m[2], form=m[3])[0].name, text)


_PLACEHOLDER = re.compile(r"<(\w+):(\w+)(?::(\w+))?>")
_RULES = [Rule(*(_spelled(field) for field in rule)) for rule in _RULES]

RULES = {rule.code: rule for rule in sorted(_RULES)}
BY_NAME = {rule.name: rule for rule in _RULES}


def get_rule(code_or_name):
    """The rule for a code (``GAL201``) or name (``golden-value-mismatch``), or None."""
    key = code_or_name.strip()
    return RULES.get(key.upper()) or BY_NAME.get(key.lower())


def explain(code_or_name):
    """The rule's page as Markdown text, or None for an unknown code."""
    rule = get_rule(code_or_name)
    if rule is None:
        return None
    return (
        f"# {rule.name} ({rule.code})\n\n"
        f"Severity: {rule.severity}. {rule.summary}\n\n"
        f"## What it does\n{rule.what}\n\n"
        f"## Why it matters\n{rule.why}\n\n"
        f"## Example\n```\n{rule.example}\n```\n\n"
        f"## Use instead\n```\n{rule.use_instead}\n```\n\n"
        f"## Fix safety\n{rule.fix_safety}\n"
    )


class Finding(NamedTuple):
    """One audit finding; ``related``: ``(line, col, message)`` places, ``edit``: the fix as
    ``(line, col, end_col, text)`` (1-based, end exclusive)."""

    code: str
    name: str
    severity: str
    path: str
    line: int
    col: int
    message: str
    found: "str | None" = None
    expected: "str | None" = None
    fix: "str | None" = None
    related: tuple = ()
    edit: "tuple | None" = None

    def to_dict(self):
        d = self._asdict()
        d["related"] = [{"line": ln, "col": col, "message": msg}
                        for ln, col, msg in self.related]
        if self.edit is not None:
            ln, col, end, text = self.edit
            d["edit"] = {"line": ln, "col": col, "end_col": end, "text": text}
        return d


_BREAK = re.compile(r"\s*[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]\s*")


def one_line(text):
    """A message quoting file text (a condition cut by an unterminated quote, say) as one
    printable line: line breaks and the blanks around them become one space."""
    return printable(_BREAK.sub(" ", text).replace("\t", " "))


def make_finding(code, path, line, message, *, col=1, found=None, expected=None, fix=None,
                 severity=None):
    """A :class:`Finding` for ``code``, with the rule's name and default severity."""
    rule = RULES[code]
    return Finding(code, rule.name, severity or rule.severity, path, int(line or 1),
                   int(col or 1), one_line(message), found, expected, fix)
