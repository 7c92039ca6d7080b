"""SGLang: the ``SGLANG_SIMULATE_ACC_*`` environment variables, read at import, so they
belong in the server's environment.  Facts: docs/engines.md §2."""

from goldenal.engines.base import EngineAdapter, env_fragment, model_names
from goldenal.engines.record import Engine

RECORD = Engine(
    name="sglang", title="SGLang",
    release="SGLang 0.5.23 (PyPI wheel sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64)",
    value_knob="SGLANG_SIMULATE_ACC_LEN", env_knob="SGLANG_SIMULATE_ACC_LEN",
    knobs=("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD",
           "SGLANG_SIMULATE_ACC_TOKEN_MODE"),
    # environment (a shell assignment or a YAML env mapping), K on the CLI
    spellings=(("SGLANG_SIMULATE_ACC_LEN", "length", "env"),
               ("SGLANG_SIMULATE_ACC_LEN", "length", "key"),
               ("SGLANG_SIMULATE_ACC_TOKEN_MODE", "token_mode", "env"),
               ("SGLANG_SIMULATE_ACC_TOKEN_MODE", "token_mode", "key"),
               ("SGLANG_SIMULATE_ACC_METHOD", "acc_method", "env"),
               ("SGLANG_SIMULATE_ACC_METHOD", "acc_method", "key"),
               ("--speculative-num-steps", "k", "flag"),
               ("--speculative-dspark-block-size", "k", "flag"),
               # ServerArgs.speculative_algorithm / _draft_model_path (srt/server_args.py)
               ("--speculative-algorithm", "method", "flag"),
               ("--speculative-draft-model-path", "draft", "flag"),
               # the draft tree's width: 1 for a chain (server_args.py)
               ("--speculative-eagle-topk", "topk", "flag"),
               # the served model and its name (0.5.23 arg_groups/field_order.py:9, :139)
               ("--model-path", "model", "flag"), ("--served-model-name", "served", "flag")),
    # DSpark's K, its block size, before the steps (arg_groups/speculative_hook.py:806-813)
    k_ranks={"--speculative-dspark-block-size": 0, "--speculative-num-steps": 1},
    launches=(("sglang", r"sglang\.launch_server|\bsglang serve\b"),),
    launch_word="sglang.launch_server",
    info_endpoints=("/get_server_info", "/server_info"),
    metrics={"acceptance_length": "sglang:spec_accept_length",
             "steps": "sglang:spec_verify_calls_total"},
    # io_struct.py / entrypoints/openai/utils.py: per-request counts in meta_info
    request_fields={"return_meta_info": True, "return_spec_tokens_details": True},
    # the counts in meta_info, newest first: 0.5.23 (managers/tokenizer_manager.py:3170-3172,
    # _calculate_spec_decoding_metrics); the aliases kept for one release after
    # sgl-project/sglang#24081 renamed them; late-2025 releases (sgl-project/sglang#13754).
    # The histogram counts steps by drafts accepted in the step; "details" is where a
    # streamed answer carries them (sglext.spec_tokens_details, sgl-project/sglang#33518).
    count_fields={"steps": ("spec_verify_ct",),
                  "accepted": ("spec_num_correct_drafts", "spec_accepted_drafts",
                               "spec_accept_token_num"),
                  "proposed": ("spec_num_proposed_drafts", "spec_proposed_drafts",
                               "spec_draft_token_num"),
                  "histogram": ("spec_correct_drafts_histogram", "spec_accept_histogram"),
                  "details": ("sglext", "spec_tokens_details"),
                  # completion_tokens / steps, printed per request
                  "length": ("spec_accept_length",),
                  # /server_info: the lifetime mean per scheduler (nulls for idle DP ranks)
                  "server_mean": ("internal_states", "avg_spec_accept_length"),
                  # where a non-streaming answer carries them (choices[0], io_struct.py)
                  "meta": ("meta_info",)},
    # the decode log line and its mean (managers/scheduler_components/metrics_reporter.py:963,
    # :1005), TokenSpeed's spelling of the mean second; bench scripts' mean, the heading
    # naming K and their summary's first field (docs/formats.md §5); bench_serving's mean,
    # result heading and backend row (benchmark/serving.py:1748, "{:<40} {:<10.2f}" rows)
    log_lines={"decode": ("Decode batch",), "length": ("accept len", "avg_accept_len"),
               "bench": ("Acceptance length", "num_steps", "#questions"),
               "serving": ("Accept length", "Serving Benchmark Result", "Backend")},
    silent_paths="SGLANG_SIMULATE_ACC_LEN not in the server process environment at launch, "
                 "SGLANG_SIMULATE_ACC_METHOD=multinomial, an out-of-range value clamped",
    # io_struct.py: return_meta_info is refused on a stream (serving_chat.py:1321)
    transport="complete",
    info_keys=("speculative_algorithm", "speculative_num_steps", "speculative_num_draft_tokens",
               "speculative_eagle_topk", "speculative_draft_model_path"),
    k_keys=("speculative_num_steps",),
    batch_draw=True,
    log_steps=40,  # --decode-log-interval's default
    file_tokens=("_sglang",),
    # the token mode first ships in the 0.5.15 wheel (docs/engines.md §2.3)
    releases=((("token_mode",), "0.5.15", None,
               "{name} needs SGLang >= 0.5.15, but the image is {image}: accepted positions "
               "are filled with token id 100"),),
)

KNOB = "SGLANG_SIMULATE_ACC_LEN"
METHOD = "SGLANG_SIMULATE_ACC_METHOD"
TOKEN_MODE = "SGLANG_SIMULATE_ACC_TOKEN_MODE"
COMPANIONS = {METHOD: "match-expected", TOKEN_MODE: "real-draft-token"}
K_KEY = "speculative-num-steps"
DSPARK_K_KEY = "speculative-dspark-block-size"
# SGLang's argument parser takes unambiguous prefixes of a long option, so
# ``--speculative-algo EAGLE`` sets ``speculative_algorithm``; srt-slurm turns
# each config key into ``--key``, and recipes use both spellings.
ALGORITHM_KEYS = ("speculative-algorithm", "speculative_algorithm",
                  "speculative-algo", "speculative_algo")


def _key(name):
    """Both spellings srt-slurm accepts for a server argument."""
    return (name, name.replace("-", "_"))


class SGLangAdapter(EngineAdapter):
    """SGLang: the AL unchanged, plus two companion variables."""

    record = RECORD
    backend_types = ("sglang",)
    emit_help = f"{KNOB}=AL, _METHOD=match-expected, _TOKEN_MODE=real-draft-token"
    decode_sets_k = True

    def desired(self, al_text):
        return {KNOB: al_text, **COMPANIONS}

    def fragment(self, al_text, *, k, fmt, **options):
        return env_fragment(self.desired(al_text), fmt)

    def site_from_recipe(self, doc, section, role, cfg, cfg_own, models):
        from goldenal.recipes import spans
        from goldenal.engines.setting import Site, int_k

        on = spans.get(cfg, ALGORITHM_KEYS)
        algorithm = spans.scalar(on)
        if on is None:
            # Any other speculative argument still turns the speculative worker on.
            on = next((v for k, v in spans.pairs(cfg) if spans.is_scalar(k)
                       and k.value.startswith(("speculative-", "speculative_"))), None)
        if on is None:
            return None
        k_name = DSPARK_K_KEY if (algorithm or "").upper() == "DSPARK" else K_KEY
        k_node = spans.get(cfg, _key(k_name))
        if k_node is None and k_name == K_KEY:
            k_name = DSPARK_K_KEY
            k_node = spans.get(cfg, _key(k_name))
        k, k_values = int_k(k_node, doc.path)
        draft = spans.scalar(spans.get(cfg, _key("speculative-draft-model-path")))
        names = model_names(cfg, (_key("model-path"), _key("served-model-name")), models)
        topk = spans.scalar(spans.get(cfg, _key("speculative-eagle-topk")))
        own = cfg_own is not None and spans.get(cfg_own, _key(k_name)) is not None
        return Site(engine=self.name, role=role, section=section.name, spec=cfg, k=k,
                    k_node=k_node, k_values=k_values, draft=draft, method=algorithm,
                    models=tuple(names), extra={"_own": own, "eagle_topk": topk}, on=on)

    def setting(self, doc, site):
        from goldenal.recipes import spans

        env = site.env
        knob_node = spans.get(env, KNOB) if env is not None else None
        anchor = knob_node if knob_node is not None else (site.k_node or site.spec)
        extra = {key: v for key in (METHOD, TOKEN_MODE)
                 if env is not None and (v := spans.scalar(spans.get(env, key))) is not None}
        if site.extra.get("eagle_topk") is not None:
            extra["speculative-eagle-topk"] = site.extra["eagle_topk"]
        return self.site_setting(doc, site, anchor, knob=KNOB if knob_node is not None else None,
                                 value=spans.scalar(knob_node), extra=extra)

    def plan(self, doc, site, al_text, *, k, force=False, **options):
        from goldenal.engines.envblock import plan_site_env
        from goldenal.engines.setting import Plan

        topk = site.extra.get("eagle_topk")
        warnings = () if topk in (None, "1") else (
            f"speculative-eagle-topk is {topk}: SGLang's real-draft-token mode requires 1 and "
            "refuses to start otherwise",)
        edits, changes = plan_site_env(doc, site, self.desired(al_text), value_key=KNOB,
                                       force=force)
        return Plan(edits=tuple(edits), changes=tuple(changes), warnings=warnings)


ADAPTER = SGLangAdapter()
