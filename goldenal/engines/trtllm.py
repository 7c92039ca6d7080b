"""TensorRT-LLM: ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` = AL - 1 (0 is off, so AL 1
cannot be expressed; the two-model path reads it with ``int()``).  Facts: docs/engines.md §3."""

from goldenal.engines.base import EngineAdapter, env_fragment, model_names
from goldenal.core.errors import PolicyError
from goldenal.engines.record import Engine

RECORD = Engine(
    name="trtllm", title="TensorRT-LLM",
    release="NVIDIA/TensorRT-LLM (speculative/interface.py at 00b6d5a2, metrics/collector.py "
            "at 050f80de)",
    value_knob="TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", unit="accepted",
    env_knob="TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
    # environment; K in the extra-options YAML
    spellings=(("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "length", "env"),
               ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "length", "key"),
               ("max_draft_len", "k", "key"),
               ("num_nextn_predict_layers", "k", "key"),
               # DecodingBaseConfig (llmapi/llm_args.py): the method, the draft (older
               # releases: speculative_model_dir)
               ("decoding_type", "method", "key"),
               ("speculative_model", "draft", "key"),
               ("speculative_model_dir", "draft", "key"),
               # the one-model path, the default (docs/engines.md §3.2)
               ("eagle3_one_model", "one_model", "key"),
               ("mtp_eagle_one_model", "one_model", "key")),
    # MTP without max_draft_len: K is its layer count (docs/engines.md §3.4)
    k_ranks={"max_draft_len": 5, "num_nextn_predict_layers": 6},
    # LlmArgs.speculative_config (llmapi/llm_args.py), whose max_draft_len switches it on
    spec_config=("speculative_config",), spec_words=("max_draft_len",),
    launches=(("trtllm-serve", r"\btrtllm-serve\b"),),
    launch_word="trtllm-serve",
    positional_model=True,  # `trtllm-serve MODEL` (tensorrt_llm/commands/serve.py: model)
    aliases=("trt", "dynamo-trt", "tensorrt_llm", "tensorrt-llm"),
    server_owner="tensorrt_llm",
    info_endpoints=("/version",),
    metrics={"acceptance_length": "trtllm_spec_decode_acceptance_length"},
    # the iteration statistics' counts (cpp/include/tensorrt_llm/executor/types.h @a98a9061
    # struct SpecDecodingStats; docs/formats.md §6): "stats" holds them per iteration
    count_fields={"stats": ("specDecodingStats",), "steps": ("numRequestsWithDraftTokens",),
                  "accepted": ("numAcceptedTokens",), "proposed": ("numDraftTokens",),
                  "length": ("acceptanceLength",),
                  # fields of every iteration record, speculating or not (types.h struct
                  # IterationStats)
                  "iteration": ("iterLatencyMS", "inflightBatchingStats")},
    silent_paths="a fractional TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS on the two-model path "
                 "(parsed with int(): 0 = off), the value 0 (off), the variable missing from the "
                 "worker environment, a clamp at the runtime draft length",
    file_tokens=("_trt",),
)

KNOB = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
K_KEY = "max_draft_len"
TWO_MODEL_FLAGS = ("eagle3_one_model", "mtp_eagle_one_model")


class TRTLLMAdapter(EngineAdapter):
    """TensorRT-LLM: AL - 1 in one environment variable."""

    record = RECORD
    backend_types = ("trt",)
    emit_help = f"{KNOB}=AL-1"

    def config_claim(self, spec):
        return 2 if spec and ("decoding_type" in spec or K_KEY in spec) else 0

    def fragment(self, al_text, *, k, fmt, **options):
        return env_fragment({KNOB: self.convert(al_text)}, fmt)

    def _site(self, doc, role, section, spec, models, own=True):
        from goldenal.recipes import spans
        from goldenal.engines.setting import Site, int_k

        k_node = spans.get(spec, K_KEY)
        layers = spans.scalar(spans.get(spec, "num_nextn_predict_layers"))
        extra = {"_own": own}
        if k_node is None and layers is not None:
            # Older llm_args set max_draft_len = num_nextn_predict_layers for MTP
            # (docs/engines.md §3.4); newer ones read it from the checkpoint.
            k_node = spans.get(spec, "num_nextn_predict_layers")
            extra["k_from"] = "num_nextn_predict_layers"
        k, k_values = int_k(k_node, doc.path)
        draft = (spans.scalar(spans.get(spec, "speculative_model"))
                 or spans.scalar(spans.get(spec, "speculative_model_dir")))
        extra.update({key: v for key in ("num_nextn_predict_layers", *TWO_MODEL_FLAGS)
                      if (v := spans.scalar(spans.get(spec, key))) is not None})
        return Site(engine=self.name, role=role, section=section, spec=spec, k=k,
                    k_node=k_node, k_values=k_values, draft=draft,
                    method=spans.scalar(spans.get(spec, "decoding_type")),
                    models=tuple(models), extra=extra)

    def site_from_recipe(self, doc, section, role, cfg, cfg_own, models):
        from goldenal.recipes import spans

        spec = spans.get(cfg, "speculative_config")
        if not spans.is_map(spec):
            return None
        own = cfg_own is not None and spans.get(cfg_own, "speculative_config") is not None
        return self._site(doc, role, section.name, spec, models, own)

    def site_from_config(self, doc, root, spec, env_file=None):
        from goldenal.recipes.env import env_file_reference, resolve_env_file

        site = self._site(doc, None, None, spec, model_names(root, ("model",)))
        if env_file is None:
            ref = env_file_reference(doc.text)
            if ref is not None:
                env_file = resolve_env_file(doc.path, *ref)
                site.extra["_env_ref"] = (doc.path, ref[1])
        site.env_file = env_file
        return site

    def setting(self, doc, site):
        from goldenal.recipes import spans
        from goldenal.recipes.env import env_file_values, read_env_file

        anchor, fields = site.k_node or site.spec, {}
        if site.env is not None:
            node = spans.get(site.env, KNOB)
            if node is not None:
                anchor, fields = node, {"knob": KNOB, "value": spans.scalar(node)}
        elif site.env_file:
            text = read_env_file(site.env_file, ref=site.extra.get("_env_ref"))
            found = env_file_values(text, site.env_file)
            if KNOB in found:
                fields = {"knob": KNOB, "value": found[KNOB][0], "path": site.env_file,
                          "line": found[KNOB][1], "col": 1}
        extra = {key: v for key, v in site.extra.items() if not key.startswith("_")}
        return self.site_setting(doc, site, anchor, extra=extra, **fields)

    def plan(self, doc, site, al_text, *, k, force=False, **options):
        from goldenal.engines.envblock import plan_env_file, plan_site_env
        from goldenal.engines.setting import Plan
        from goldenal.recipes import spans

        value = self.convert(al_text)
        # the two-model path parses the value with int(): a fraction is refused (§3.2)
        flag = next((f for f in TWO_MODEL_FLAGS
                     if str(site.extra.get(f, "")).strip().lower() == "false"), None)
        if flag is not None:
            def whole(number):
                integer, _, frac = number.partition(".")
                if frac.strip("0"):
                    raise PolicyError(f"{flag}: false selects the two-model path, which reads "
                                      f"{KNOB} with int(): {number} would silently disable "
                                      "forcing; serve the one-model path or a K whose golden "
                                      "AL - 1 is an integer", path=doc.path,
                                      line=spans.line_of(site.spec))
                return integer
            value = spans.each(value, whole)
        warnings = []
        layers = site.extra.get("num_nextn_predict_layers")
        if site.extra.get("k_from"):
            warnings.append(f"max_draft_len is not set; K={site.k} is read from "
                            "num_nextn_predict_layers, as older TensorRT-LLM releases do (newer "
                            "ones may take it from the checkpoint): set max_draft_len explicitly")
        elif layers is not None and site.k is not None and str(site.k) != str(layers):
            warnings.append(f"num_nextn_predict_layers ({layers}) differs from max_draft_len "
                            f"({site.k}); K is read as max_draft_len")
        if site.env is None and site.env_file:
            text, edits, changes = plan_env_file(site.env_file, {KNOB: value}, value_key=KNOB,
                                                 force=force, ref=site.extra.get("_env_ref"))
            return Plan(changes=tuple(changes), warnings=tuple(warnings),
                        edits=tuple(("file", site.env_file, text, e) for e in edits))
        edits, changes = plan_site_env(doc, site, {KNOB: value}, value_key=KNOB, force=force)
        return Plan(edits=tuple(edits), changes=tuple(changes), warnings=tuple(warnings))


ADAPTER = TRTLLMAdapter()
