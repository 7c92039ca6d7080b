"""vLLM: ``rejection_sample_method: "synthetic"`` plus ``synthetic_acceptance_length`` (or
``_rates``) in the speculative config, wherever it is written.  Facts: docs/engines.md §1.1,
§1.4."""

import re
import shlex
from collections import namedtuple

from goldenal.engines.base import (EngineAdapter, check_pinned, chosen_k, env_fragment,
                                   model_names, on_both_paths, same_number)
from goldenal.core.errors import DuplicateKeyError, ParseError, PolicyError
from goldenal.engines.record import Engine

RECORD = Engine(
    name="vllm", title="vLLM",
    release="vllm-project/vllm 0.33.0 (vllm/config/speculative.py at 002e77c1, "
            "vllm/v1/spec_decode/metrics.py at ee4ceaae)",
    value_knob="synthetic_acceptance_length",
    knobs=("synthetic_acceptance_length", "synthetic_acceptance_rates",
           "synthetic_acceptance_rate", "rejection_sample_method"),
    # keys of --speculative-config (JSON, YAML) and 0.33's shorthands; keys also take ``=``
    spellings=(("synthetic_acceptance_length", "length", "key", ":="),
               ("synthetic_acceptance_rates", "rates", "key", ":="),
               ("synthetic_acceptance_rate", "rate", "key", ":="),
               ("num_speculative_tokens", "k", "key", ":="),
               ("--spec-tokens", "k", "flag"),
               # SpeculativeConfig.method / .model (vllm/config/speculative.py), the method's
               # 0.33 shorthand (vllm/engine/arg_utils.py:1869-1872)
               ("method", "method", "key"),
               ("--spec-method", "method", "flag"),
               ("model", "draft", "key"),
               # the served model: EngineArgs.model / .served_model_name (engine/arg_utils.py)
               ("--model", "model", "flag"), ("--served-model-name", "served", "flag")),
    k_ranks={"num_speculative_tokens": 2, "--spec-tokens": 4},
    # SpeculativeConfig's draft and verifier sampling keys (vllm/config/speculative.py)
    sample_keys=("draft_sample_method", "rejection_sample_method"),
    # `vllm serve --config` YAML: the speculative mapping, its option names dashed or not
    # (vllm/utils/argparse_utils.py:371-376, :664-668); the served model's keys are flags'
    spec_config=("speculative-config", "speculative_config"), config_file=True,
    launches=(("vllm", r"\bvllm serve\b|vllm\.entrypoints"),),
    launch_word="vllm serve",
    positional_model=True,  # `vllm serve MODEL` (vllm/entrypoints/cli/serve.py: model_tag)
    info_endpoints=("/version",),
    metrics={"drafts": "vllm:spec_decode_num_drafts",
             "draft_tokens": "vllm:spec_decode_num_draft_tokens",
             "accepted": "vllm:spec_decode_num_accepted_tokens",
             "per_position": "vllm:spec_decode_num_accepted_tokens_per_pos",
             "emitted": "vllm:spec_decode_num_emitted_tokens"},
    # a response's metrics.speculative_decoding under --per-request-spec-decode-metrics
    # (vllm-project/vllm#48915; vllm/entrypoints/generate/base/protocol.py:100-129), and the
    # keys of `vllm bench serve --save-result` (vllm/benchmarks/serve.py:1377-1386), each
    # also read under its counter's unprefixed name, which some downstream tools write
    count_fields={"request": ("metrics", "speculative_decoding"), "steps": ("num_spec_steps",),
                  "accepted": ("num_accepted_draft_tokens",), "proposed": ("num_draft_tokens",),
                  "k": ("num_spec_tokens",), "histogram": ("acceptance_histogram",),
                  "length": ("mean_acceptance_length",), "rate": ("draft_acceptance_rate",),
                  "bench_steps": ("spec_decode_num_drafts",),
                  "bench_accepted": ("spec_decode_accepted_tokens",
                                     "spec_decode_num_accepted_tokens"),
                  "bench_proposed": ("spec_decode_draft_tokens", "spec_decode_num_draft_tokens"),
                  "bench_length": ("spec_decode_acceptance_length",),
                  "bench_rate": ("spec_decode_acceptance_rate",),
                  "bench_per_position": ("spec_decode_per_position_acceptance_rates",)},
    # the metrics lines' tags, V1 then V0 (docs/formats.md §1.1)
    log_lines={"tags": ("SpecDecoding metrics", "Speculative metrics"),
               # the V1 line after its tag: vllm/v1/spec_decode/metrics.py:120-136's format,
               # a piece per field
               "line": ("Mean acceptance length: %.2f, ", "Accepted throughput: %.2f tokens/s, ",
                        "Drafted throughput: %.2f tokens/s, ", "Accepted: %d tokens, ",
                        "Drafted: %d tokens, ", "Per-position acceptance rate: %s, ",
                        "Avg Draft acceptance rate: %.1f%%"),
               # every field read by name (families A-D, docs/formats.md §1.2-§1.5): counts,
               # means, rates, throughputs, the per-position list
               "fields": ("Accepted", "Drafted", "Number of accepted tokens",
                          "Number of draft tokens", "Number of emitted tokens",
                          "Number of speculative tokens", "Mean acceptance length",
                          "System efficiency", "Draft acceptance rate",
                          "Avg Draft acceptance rate", "Accepted throughput",
                          "Drafted throughput", "Per-position acceptance rate"),
               # the counters' HELP text: drafts, draft tokens, accepted, per position
               # (vllm/v1/spec_decode/metrics.py:229-231, :256)
               "help": ("Number of spec decoding drafts.", "Number of draft tokens.",
                        "Number of accepted tokens.", "Accepted tokens per draft position."),
               # start-up lines that mark a vLLM server log (docs/formats.md §1.1)
               "startup": ("vLLM API server version", "non-default args:", "[loggers.py:",
                           "Initializing a V1 LLM engine"),
               # `vllm bench serve`'s console block (vllm/benchmarks/serve.py, PR #31739)
               "console": ("Speculative Decoding", "Drafts", "Draft tokens", "Accepted tokens",
                           "Acceptance length", "Per-position acceptance (%)", "Position"),
               # examples/offline_inference/spec_decode.py's printout (docs/formats.md §1.6)
               "offline": ("total_num_output_tokens", "num_drafts", "num_draft_tokens",
                           "num_accepted_tokens", "mean acceptance length", "acceptance at token")},
    silent_paths="vLLM 0.19.x under Model Runner V1 (synthetic only in MRV2), "
                 "rejection_sample_method not 'synthetic', vllm-ascend before #12256 (Model "
                 "Runner V1) or #15556 (Model Runner V2)",
    old_metrics={"efficiency": "vllm:spec_decode_efficiency"},  # V0's only usable figure
    file_tokens=("_vllm",),
    releases=((("length", "rates"), "0.20", None,
               "{name} needs vLLM >= 0.20, but the image is {image}; 0.19 knows only "
               "synthetic_acceptance_rate and older releases no synthetic mode"),
              (("rate",), None, "0.20", "{name} was replaced by synthetic_acceptance_length "
                                        "in vLLM 0.20; image {image} rejects it")),
)

# the length, the rates, vLLM 0.19.x's scalar rate (geometric decay), the verifier's method
KNOB, RATES, OLD_RATE, METHOD_KEY = RECORD.knobs
SYNTHETIC = "synthetic"
SPEC_KEYS = RECORD.spec_config
MODEL_KEYS = ("model", "served-model-name", "served_model_name")
# the keys whose text as written is kept (read back and rewritten)
_WRITTEN = frozenset((KNOB, RATES, OLD_RATE, METHOD_KEY))
# rejection_sample_method values that are defaults, not a curve's sampling variant
_DEFAULT_METHODS = (None, SYNTHETIC, "strict", "standard")


def parse_speculative_config(json_text, *, path=None, line=None):
    """A ``--speculative-config`` JSON object as a dict, a duplicate key refused."""
    import json

    def unique(pairs):
        out = {}
        for key, value in pairs:
            if key in out:
                raise DuplicateKeyError(key, path=path, line=line, first_line=line,
                                        within=" in the speculative-config JSON")
            out[key] = value
        return out

    try:
        value = json.loads(json_text, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise ParseError(f"speculative-config JSON does not parse: {exc.msg} at column "
                         f"{exc.colno}", path=path, line=line) from None
    if not isinstance(value, dict):
        raise ParseError("speculative-config JSON is not an object", path=path, line=line)
    return value


def variant_of(spec):
    """The sampling-variant keys of a speculative config that name a curve."""
    out = {}
    if spec.get("draft_sample_method") is not None:
        out["draft_sample_method"] = str(spec["draft_sample_method"])
    if spec.get(METHOD_KEY) not in _DEFAULT_METHODS:
        out[METHOD_KEY] = str(spec[METHOD_KEY])
    return out


def format_rates(rates, compact=True):
    """A JSON list of rates with the shortest spelling of each float."""
    return "[" + ("," if compact else ", ").join(repr(float(r)) for r in rates) + "]"


def _spec_site(spec, models, *, role=None, section=None, node=None, extra=None):
    """The :class:`Site` of a speculative config; ``node``: where a recipe or config holds it."""
    from goldenal.engines.setting import Site

    n = spec.get("num_speculative_tokens")
    whole = isinstance(n, int) and not isinstance(n, bool)
    k = int(n) if whole or (isinstance(n, str) and n.strip().isdigit()) else None
    draft = spec.get("model")
    return Site(engine="vllm", role=role, section=section, spec=node, k=k, k_node=node,
                k_values=(k,) if k is not None else (), draft=str(draft) if draft else None,
                method=str(spec["method"]) if spec.get("method") else None,
                variant=variant_of(spec), models=tuple(models), extra=extra or {})


def _raw_members(json_text, path, line):
    """Each top-level member's value as written in a JSON object's text."""
    from goldenal.recipes import spans

    members, _ = spans.json_members(json_text, path=path, line=line)
    return {key: json_text[s:e] for key, (_, s, e) in members.items()}


class VLLMAdapter(EngineAdapter):
    """vLLM: the AL unchanged, as a JSON key of the speculative config."""

    record = RECORD
    emit_options = ("spec_config",)
    emit_help = (f'{METHOD_KEY} "{SYNTHETIC}" + {KNOB} AL\n'
                 f"(--distribution: {RATES} from the whole curve)")
    verifier = SYNTHETIC
    backend_types = ("vllm",)

    script_name = script_sign = "vllm serve"

    def plan_script(self, path, text, golden_for, *, k=None, rates_for=None, form=None,
                    force=False, launched=(), known=()):
        return plan_command(path, text, golden_for, k=k, rates_for=rates_for, force=force)

    def config_claim(self, spec):
        return 1            # a speculative-config of any other shape is vLLM's

    def rates_value(self, rates):
        return "[" + ", ".join(repr(r) for r in rates) + "]"

    def parse_spec_config(self, text):
        return parse_speculative_config(text)

    def fragment(self, al_text, *, k, fmt, spec_config=None, rates=None, **options):
        """The knobs merged into ``spec_config`` (the rest of the JSON), in one format."""
        import json

        from goldenal.recipes import spans

        base = "{}" if spec_config is None else spec_config
        parse_speculative_config(base)
        compact = "," in base and ", " not in base or base.strip() == "{}"
        updates, _ = desired_keys({}, {}, al_text, k=k, rates=rates, compact=compact)
        if base.strip() == "{}":
            body = "{" + ",".join(f"{json.dumps(key)}:{v}" for key, v in updates.items()
                                  if v is not None) + "}"
        else:
            body = spans.json_set(base, updates)
        if fmt == "json":
            return body
        # the shell formats quote for the shell (a ' inside is '"'"'), yaml for YAML ('')
        if fmt == "yaml":
            return "speculative-config: " + spans.quote(body, "'")
        return env_fragment({"SPEC_CONFIG": body}, fmt,
                            args="--speculative-config " + shlex.quote(body))

    def _spec(self, doc, node):
        """(spec dict, members-with-raw-text) of a JSON-string or mapping node."""
        from goldenal.recipes import spans

        if spans.is_scalar(node):
            text = node.value
            spec = parse_speculative_config(text, path=doc.path, line=spans.line_of(node))
            if not spec.keys() & _WRITTEN:
                return spec, {}     # raw text is only read for the keys inject writes
            return spec, _raw_members(text, doc.path, spans.line_of(node))
        if spans.is_map(node):
            return spans.to_python(node), {key.value: doc.text[v.start_mark.index:v.end_mark.index]
                                           for key, v in spans.pairs(node)
                                           if spans.is_scalar(key)}
        raise ParseError("speculative-config must be a JSON string or a mapping",
                         path=doc.path, line=spans.line_of(node))

    def _site(self, doc, role, section, node, models, read=None):
        """The site of a speculative config written at ``node`` and read as ``read``
        (a variant's mapping merged over its base's), else as written."""
        spec, raw = self._spec(doc, node if read is None else read)
        return _spec_site(spec, models, role=role, section=section, node=node,
                          extra={"spec": spec, "raw": raw, "read": read})

    def site_from_recipe(self, doc, section, role, cfg, cfg_own, models):
        from goldenal.recipes import spans

        pair = spans.get_pair(cfg, SPEC_KEYS)
        if pair is None:
            return None
        # srtctl merges a variant's speculative-config mapping over its base's key by key
        # (deep_merge): the variant runs the merged one, and inject writes its own
        site = self._site(doc, role, section.name, pair[1], model_names(cfg, MODEL_KEYS, models),
                          read=spans.get(cfg, SPEC_KEYS))
        site.extra["_own"] = cfg_own is not None and spans.get_pair(cfg_own, SPEC_KEYS) is not None
        return site

    def site_from_config(self, doc, root, spec, env_file=None):
        return self._site(doc, None, None, spec, model_names(root, MODEL_KEYS))

    def spec_facts(self, site):
        import json

        spec = site.extra.get("spec")
        if not isinstance(spec, dict):
            return None
        try:
            k = int(str(spec.get("num_speculative_tokens")).strip().strip("'\""))
        except ValueError:
            k = None
        # as the site reads them: text, whatever the mapping holds (a list is no name)
        rsm = spec.get(METHOD_KEY)
        out = {"k": k, "draft": site.draft, "method": site.method, "variant": {},
               "rsm": rsm if rsm is None or isinstance(rsm, str) else json.dumps(rsm)}
        if spec.get("draft_sample_method"):
            out["variant"]["draft_sample_method"] = str(spec["draft_sample_method"])
        knob = next((key for key in (KNOB, RATES, OLD_RATE) if spec.get(key) is not None), None)
        if knob is not None:   # a list of rates quoted as JSON
            value = spec[knob]
            out["value"] = json.dumps(value) if isinstance(value, list) else str(value)
        return out

    def setting(self, doc, site):
        import json

        from goldenal.recipes import spans

        spec, raw = site.extra["spec"], site.extra["raw"]
        knob = next((key for key in (KNOB, RATES, OLD_RATE) if spec.get(key) is not None), None)
        value = raw.get(knob, json.dumps(spec[knob])) if knob is not None else None
        extra = {key: spec[key] for key in (RATES, "draft_sample_method") if key in spec}
        # a knob a variant reads from its base's mapping: where the base writes it
        read, anchor = site.extra.get("read"), None
        if (knob is not None and spans.is_map(read) and spans.is_map(site.spec)
                and spans.own_pair(site.spec, knob) is None):
            anchor = spans.get(read, knob)
        return self.site_setting(doc, site, anchor or site.spec, knob=knob, value=value,
                                 extra=extra, rejection_sample_method=spec.get(METHOD_KEY))

    def plan(self, doc, site, al_text, *, k, force=False, rates=None, **options):
        from goldenal.engines.setting import Plan
        from goldenal.recipes import spans

        spec, raw = site.extra["spec"], site.extra["raw"]
        line = spans.line_of(site.spec)
        if isinstance(al_text, spans.PerVariant):
            desired, changes = per_variant_keys(spec, raw, al_text, force=force, rates=rates,
                                                path=doc.path, line=line)
            return Plan(edits=tuple(self._mapping_edits(doc, site.spec, desired, spec)),
                        changes=tuple(changes))
        # JSON strings keep their own separators; YAML flow lists read better spaced.
        compact = spans.is_scalar(site.spec) and ", " not in site.spec.value
        desired, changes = desired_keys(spec, raw, al_text, k=k, force=force, rates=rates,
                                        compact=compact, path=doc.path, line=line)
        if not changes:
            return Plan()
        node = site.spec
        if spans.is_scalar(node):
            new_json = spans.json_set(node.value, desired, path=doc.path, line=line)
            edit = spans.replace_scalar(doc.text, node, new_json, path=doc.path)
            edits = (edit,) if edit else ()
        else:
            edits = tuple(self._mapping_edits(doc, node, desired, spec))
        return Plan(edits=edits, changes=tuple(changes))

    def _mapping_edits(self, doc, node, desired, spec):
        """Edits making mapping ``node`` hold ``desired``; a key to remove that ``spec`` (the
        mapping as read) inherits from a base section is set to null, which deletes it."""
        import json

        from goldenal.recipes import spans

        json_style = any(spans.is_scalar(key) and key.style == '"' for key, _ in node.value)
        edits, missing = [], []
        for key, raw in desired.items():
            if isinstance(raw, spans.PerVariant):   # the list as the zip section writes it
                written = spans.own_pair(spans.as_written(node), key)
                edit = written and spans.replace_scalar(doc.text, written[1], raw,
                                                        path=doc.path)
                if written is None:
                    missing.append((key, raw))
                elif edit:
                    edits.append(edit)
                continue
            pair = spans.own_pair(node, key)
            if raw is None:
                if pair is not None and not spans.is_null(pair[1]):  # a null deletes already
                    edits.append(spans.remove_from_mapping(doc.text, node, key, path=doc.path))
                elif pair is None and spec.get(key) is not None:
                    missing.append((key, "null"))
                continue
            rendered = raw
            if raw.startswith('"') and not json_style:
                rendered = json.loads(raw)  # plain YAML string
            if pair is None:
                if not _inherited(spec, key, raw):
                    missing.append((key, rendered))
                continue
            value = pair[1]
            start, end = value.start_mark.index, value.end_mark.index
            if spans.is_scalar(value) and value.style in ("'", '"') and raw.startswith('"'):
                rendered = spans.quote(json.loads(raw), value.style)
            if start == end and doc.text[start - 1:start] == ":":   # ``key:`` with no value
                rendered = " " + rendered
            if doc.text[start:end] != rendered:
                edits.append(spans.Edit(start, end, rendered))
        if missing:
            edits = spans.into_removal(edits, spans.add_to_mapping(doc.text, node, missing,
                                                                    path=doc.path))
        return edits


def _inherited(spec, key, raw):
    """Does ``spec`` (a variant's mapping as read) already hold JSON text ``raw`` at ``key``?"""
    import json

    if key not in spec or not isinstance(spec[key], (str, int)):
        return False
    return spec[key] == json.loads(raw) if raw.startswith('"') else same_number(spec[key], raw)


def desired_keys(spec, raw, al_text, *, k, force=False, rates=None, compact=True, path=None,
                 line=None):
    """``({key: raw JSON text, or None to remove}, [(key, old, new)])`` to carry ``al_text``
    (``raw``: the text of ``spec``'s written keys), for configs and launch scripts."""
    import json

    if spec.get(KNOB) is not None:      # a null or empty knob pins nothing
        check_pinned(KNOB, raw[KNOB], al_text, force=force, path=path, line=line)
    if RATES in spec and isinstance(spec[RATES], list):
        try:
            pinned = 1 + sum(float(r) for r in spec[RATES])
        except (TypeError, ValueError):
            pinned = None
        if pinned is not None and abs(pinned - float(al_text)) > 1e-9 and not force:
            check_pinned(RATES, f"{pinned:.6g} (1 + sum of rates)", al_text, force=force,
                         path=path, line=line)
        if rates is None and pinned is not None and abs(pinned - float(al_text)) <= 1e-9:
            # A distribution already pinned to this AL is kept as it is.
            rates = [float(r) for r in spec[RATES]]
    if spec.get(OLD_RATE) is not None:
        try:
            pinned = 1 + k * float(spec[OLD_RATE])
        except (TypeError, ValueError):
            pinned = None
        if pinned is None or abs(pinned - float(al_text)) > 5e-3:
            check_pinned(OLD_RATE, f"{spec[OLD_RATE]} (AL {pinned})", al_text,
                         force=force, path=path, line=line)
    desired = {METHOD_KEY: json.dumps(SYNTHETIC)}
    if rates is not None:
        desired[RATES] = (raw[RATES] if RATES in spec and _same_rates(spec[RATES], rates)
                          else format_rates(rates, compact))
        desired[KNOB] = None
    else:
        # an already-golden length is kept as written: 2.5 stays 2.5, byte for byte
        keep = KNOB in spec and same_number(raw[KNOB], al_text)
        desired[KNOB] = raw[KNOB] if keep else al_text
        desired[RATES] = None
    desired[OLD_RATE] = None
    return desired, [(key, raw.get(key), new) for key, new in desired.items()
                     if not _same_member(raw.get(key), new)]


def per_variant_keys(spec, raw, al_texts, *, force=False, rates=None, path=None, line=None):
    """:func:`desired_keys` for the speculative-config mapping every variant of a
    ``zip_override_*`` section reads: the length as a list, one per variant (a
    :class:`~goldenal.recipes.spans.PerVariant`); what the mapping pins (a length, rates, a
    rate), each variant's value must match, unless ``force``."""
    import json

    if rates is not None:
        raise PolicyError("--distribution would write one rates list per variant: give each "
                          "variant of the zip_override section its own section", path=path,
                          line=line)
    for key in (KNOB, RATES, OLD_RATE):
        if spec.get(key) is not None:
            old = raw.get(key, json.dumps(spec[key]))
            for al_text in al_texts:
                check_pinned(key, old, al_text, force=force, path=path, line=line)
    desired = {METHOD_KEY: json.dumps(SYNTHETIC), KNOB: al_texts, RATES: None, OLD_RATE: None}
    return desired, [(key, raw.get(key), new) for key, new in desired.items()
                     if not _same_member(raw.get(key), new)]


def _same_member(written, wanted):
    """Does a member written as ``written`` (JSON, or a YAML scalar as written) already
    say JSON text ``wanted``?  ``synthetic`` in a YAML mapping is ``"synthetic"``."""
    import json

    if written is None or wanted is None:
        return written == wanted
    if written == wanted:
        return True
    if not isinstance(wanted, str) or not wanted.startswith('"'):
        return False
    quoted = len(written) >= 2 and written[0] == written[-1] and written[0] in "'\""
    return (written[1:-1] if quoted else written) == json.loads(wanted)


def _same_rates(a, b):
    try:
        return len(a) == len(b) and all(abs(float(x) - float(y)) <= 1e-12 for x, y in zip(a, b))
    except (TypeError, ValueError):
        return False


ADAPTER = VLLMAdapter()


# -- launch scripts: ``vllm serve ... --speculative-config '{...}'`` ---------------

# the flag and its value as one shell word (a quoted string or a bare word)
_SPEC_FLAG = re.compile(r"""(?<![\w-])--speculative[-_]config"""
                        r"""(?:(?:[ \t]*\\\r?\n[ \t]*)+|=|[ \t]+)"""
                        r"""(?P<word>'[^']*'|"(?:[^"\\]|\\.)*"|[^\s;|&]+)""")
# the served model: ``vllm serve MODEL`` (not a flag) or ``--model MODEL``
_SERVED = re.compile(r"""(?:\bvllm serve[ \t]+|(?<![\w-])--model(?:=|[ \t]+))"""
                     r"""(?P<word>'[^']*'|"[^"]*"|(?!-)[^\s\\;|&]+)""")


# one literal ``--speculative-config`` JSON of a script, offsets inside its quotes
CommandSpec = namedtuple("CommandSpec", "line start end json_text double_quoted spec raw")


def command_specs(path, text):
    """``(specs, models served)`` of a script; a value that is not literal JSON is refused."""
    from goldenal.recipes.shell import DQ_ESCAPE, literal_variables, resolve
    from goldenal.recipes import knobs as table

    variables = literal_variables(text)
    served = (resolve(m.group("word"), variables) for m in _SERVED.finditer(text)
              if not table.commented(text, m.start()))
    models = list(dict.fromkeys(filter(None, served)))
    out = []
    for m in _SPEC_FLAG.finditer(text):
        if table.commented(text, m.start()):
            continue
        line = text.count("\n", 0, m.start()) + 1
        word = m.group("word")
        quote = word[0] if word[0] in "'\"" else ""
        inner = word[1:-1] if quote else word
        json_text = DQ_ESCAPE.sub(r"\1", inner) if quote == '"' else inner
        if "$" in json_text or "`" in json_text or not json_text.lstrip().startswith("{"):
            raise ParseError(f"--speculative-config {word} is not literal JSON; write {KNOB} "
                             "where the script builds it (goldenal emit --engine vllm prints "
                             "it)", path=path, line=line)
        start = m.start("word") + len(quote)
        out.append(CommandSpec(line, start, start + len(inner), json_text, quote == '"',
                               parse_speculative_config(json_text, path=path, line=line),
                               _raw_members(json_text, path, line)))
    return out, models


def plan_command(path, text, golden_for, *, k=None, rates_for=None, force=False):
    """:meth:`~goldenal.engines.base.EngineAdapter.plan_script` for ``vllm serve`` lines: each
    literal JSON is a launch path; only the changed members are spliced in."""
    from goldenal.recipes.shell import eval_paths
    from goldenal.engines.setting import Plan
    from goldenal.recipes import spans

    specs, models = command_specs(path, text)
    if not specs:
        raise ParseError("no --speculative-config on the vllm serve command line", path=path)
    paths = eval_paths(text)
    guarded = "EVAL_ONLY" in text
    edits, changes, targets = [], [], []
    for cs in specs:
        where = paths.get(cs.line)
        if where is True:
            if cs.spec.keys() & {KNOB, RATES, OLD_RATE}:
                raise PolicyError("the --speculative-config on the EVAL_ONLY=true path sets a "
                                  "synthetic acceptance, which must keep real verification; "
                                  "remove it there first", path=path, line=cs.line)
            continue
        if where is None and guarded:
            raise on_both_paths("--speculative-config", path=path, line=cs.line)
        site = _spec_site(cs.spec, models)
        site_k = chosen_k(site.k, k, said=f"num_speculative_tokens {site.k}", path=path,
                          line=cs.line,
                          missing="the --speculative-config has no num_speculative_tokens")
        al_text = golden_for(site, site_k, cs.line)
        rates = rates_for(site, site_k, al_text) if rates_for else None
        desired, changed = desired_keys(cs.spec, cs.raw, al_text, k=site_k, force=force,
                                        rates=rates, compact=", " not in cs.json_text,
                                        path=path, line=cs.line)
        targets.append((cs.line, site_k, al_text,
                        desired[RATES] if rates is not None else desired[KNOB], site))
        if not changed:
            continue
        new = spans.json_set(cs.json_text, desired, path=path, line=cs.line)
        if cs.double_quoted:
            new = re.sub(r'([$`"\\])', r"\\\1", new)
        edits.append(spans.Edit(cs.start, cs.end, new))
        changes.extend((cs.line, key, old, value) for key, old, value in changed)
    return Plan(edits=tuple(edits), changes=tuple(changes)), targets
