"""The shared shape of every engine adapter, and the helpers the engines share."""

import os

FORMATS = ("shell", "env", "json", "yaml", "args")


class EngineAdapter:
    """One engine's spelling of the golden AL; the class attributes say what it supports
    (docs/architecture.md, "Adding an engine")."""

    record = None           # the engine's :class:`~goldenal.engines.record.Engine`
    forms = ()              # the ``form`` values ``emit`` accepts
    default_form = "length"
    emit_options = ()       # keyword options of :meth:`fragment` (``emit``'s flags)
    emit_help = ""          # for ``goldenal emit --help``: what the fragment sets
    verifier = None         # the ``rejection_sample_method`` a written knob puts in place
    backend_types = ()      # words of an srt-slurm ``backend.type`` naming the engine
    decode_sets_k = False   # disaggregated: the decode worker's K picks the pair's cell
    # launch scripts: how messages name the ones this adapter rewrites (None: it does
    # not), and what it looks for in them
    script_name = script_sign = None

    @property
    def name(self):
        return self.record.name

    @property
    def knob(self):
        return self.record.value_knob

    def script_claim(self, text, launched):
        """How surely a launch script (``launched``: the engines it starts) is this engine's."""
        return 2 if launched == (self.name,) else 0

    def plan_script(self, path, text, golden_for, *, k=None, rates_for=None, form=None,
                    force=False, launched=(), known=()):
        """``(Plan, targets)``: every launch command of a script carrying its golden AL
        (``golden_for(site, k, line)``; targets ``(line, k, al_text, knob_value, site)``)."""
        raise NotImplementedError

    def plan_commands(self, plan_command, found, path, text, golden_for, rates_for=None,
                      **options):
        """:meth:`plan_script` by a ``plan_command`` working by K; every path serves ``found``."""
        from functools import partial

        from goldenal.engines.setting import command_site

        site = partial(command_site, self.name, found)
        if rates_for is not None:
            options["rates_for"] = lambda site_k, al: rates_for(site(site_k), site_k, al)
        plan, targets = plan_command(path, text, lambda site_k, line: golden_for(
            site(site_k), site_k, line), **options)
        return plan, [(*t, site(t[1])) for t in targets]

    def config_claim(self, spec):
        """How surely a serve config's speculative settings (a dict, or None) are this engine's."""
        return 0

    def emit(self, al_text, *, k, fmt, rates=None, form=None, **options):
        """``(text, knob, value, notes)``: the fragment, the knob it sets and its value."""
        text = self.fragment(al_text, k=k, fmt=fmt, rates=rates, form=form, **options)
        if rates is not None:
            return text, self.record.knob_for("rates"), self.rates_value(rates), ()
        knob = self.knob if form in (None, "length") else self.record.knob_for(form)
        return text, knob, self.convert(al_text, k=k, form=form), ()

    def rates_value(self, rates):
        raise NotImplementedError

    def min_variance_value(self, al_text, k):
        """The rates knob's value realising the schedule the length knobs of the other
        engines do (what the audit expects of a rates knob); None where the engine has none."""
        return None

    def read_script(self, path, text, variables):
        """This engine's length and rates knobs in a launch script, each with the K set near it."""
        from goldenal.engines.setting import SpecSetting
        from goldenal.recipes import knobs
        from goldenal.recipes.shell import resolve, unquote

        k, out = None, []
        for row, m in knobs.finditer(text, self.record.rows(setting=(knobs.LENGTH,
                                                                      knobs.RATES))):
            at = row.start(m)
            raw = m.group("value").rstrip("\\").strip()
            if not out:
                k = _script_k(text, self.record.rows(setting=knobs.K)[:1], variables)
            extra = {}
            resolved = resolve(raw, variables)
            if resolved is not None and resolved != unquote(raw):
                extra["resolved"] = resolved
            out.append(SpecSetting(
                path=path, line=line_at(text, at), col=col_at(text, at), engine=self.name,
                role=None, knob=row.name, value=unquote(raw), k=k, extra=extra))
        return out

    def convert(self, al_text, *, k=None, form=None):
        """The knob value for a committed AL string (exact decimal arithmetic); each
        variant's, for a :class:`~goldenal.recipes.spans.PerVariant` of them."""
        from goldenal.engines.values import record_value

        if isinstance(al_text, tuple):     # only inject makes one: lookup stays light
            from goldenal.recipes.spans import each

            return each(al_text, lambda al: self.convert(al, k=k, form=form))
        return record_value(self.record, al_text, k=k, form=form, forms=self.forms)

    def fragment(self, al_text, *, k, fmt, **options):
        raise NotImplementedError

    def site_from_recipe(self, doc, section, role, cfg, cfg_own, models):
        return None

    def site_from_config(self, doc, root, spec, env_file=None):
        raise NotImplementedError

    def setting(self, doc, site):
        raise NotImplementedError

    def start_refusal(self, said, value, k, *, al, rates, spec_on, k_default, forms):
        """``(code, message)`` of the start-up check a server with this knob fails, or None
        (for an engine that refuses a knob at start-up: its record's ``spec_off``).
        ``said``: the knob as written; ``al``: its value as a Decimal (length form) and
        ``rates``: True for the rates form; ``spec_on``: speculative decoding switched on;
        ``k_default``: K is the engine's default; ``forms``: {setting: knob} of every form set.
        """
        return None

    def spec_facts(self, site):
        """K, draft, method, ``rsm`` (the verifier's method), ``variant`` and the knob's
        ``value`` as the audit reads them from a site's parsed speculative config; None
        for an engine whose settings are separate keys or flags."""
        return None

    def site_setting(self, doc, site, anchor, **fields):
        """The SpecSetting of a recipe or config site, placed at node ``anchor``."""
        from goldenal.engines.setting import SpecSetting
        from goldenal.recipes import spans

        return SpecSetting(**{
            "path": doc.path, "line": spans.line_of(anchor), "col": spans.col_of(anchor),
            "engine": self.name, "role": site.role, "k": site.k, "draft": site.draft,
            "method": site.method, "variant": dict(site.variant),
            "model": site.models[0] if site.models else None, **fields})

    def plan(self, doc, site, al_text, *, k, force=False, **options):
        raise NotImplementedError


def script_text(path, text=None):
    """``(path, text)`` of a script or argument file, read with ``\\n`` lines unless given."""
    from goldenal.core.files import read_text

    path = os.fspath(path)
    return path, read_text(path, universal=True) if text is None else text


def line_at(text, index):
    """The 1-based line of ``text`` holding ``index``."""
    return text.count("\n", 0, index) + 1


def col_at(text, index):
    """The 1-based column of ``index`` in its line."""
    return index - text.rfind("\n", 0, index)


def model_names(node, keys, names=()):
    """``names`` followed by the non-empty scalars of ``keys`` in a mapping node."""
    from goldenal.recipes import spans

    found = (spans.scalar(spans.get(node, key)) for key in keys)
    return [*names, *filter(None, found)]


def env_fragment(items, fmt, *, args=None):
    """``{name: value}`` as environment settings in one format (``args``: the flags form)."""
    import json
    import shlex

    if fmt == "json":
        return json.dumps(items)
    if fmt == "args" and args is not None:
        return args
    spelled = {"shell": "export {}={}", "env": "{}={}", "args": "{}={}", "yaml": '{}: "{}"'}
    if fmt not in spelled:
        raise ValueError(f"unknown format {fmt!r}")
    return (" " if fmt == "args" else "\n").join(
        spelled[fmt].format(key, value if fmt == "yaml" else shlex.quote(value))
        for key, value in items.items())


def same_number(a, b):
    """True when two decimal strings spell the same number (``2.5`` and ``2.50``)."""
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(str(a).strip()) == Decimal(str(b).strip())
    except InvalidOperation:
        return False


def check_pinned(knob, old, new, *, force, path, line):
    """Refuse to overwrite a different pinned value unless forced."""
    from goldenal.core.errors import ConflictError

    if old is None or old == new or same_number(old, new) or force:
        return
    raise ConflictError(f"{knob} is already pinned to {old}, golden value is {new}; "
                        "use --force to overwrite", path=path, line=line)


def chosen_k(found, k, *, said, missing, path, line):
    """K of a site: the file's (``found``, stated as ``said``), else ``--k``, which must agree."""
    from goldenal.core.errors import ParseError, PolicyError

    if found is not None and k is not None and int(k) != found:
        raise PolicyError(f"--k {k} contradicts the file: {said}", path=path, line=line)
    chosen = found if found is not None else k
    if chosen is None:
        raise ParseError(f"K is missing: {missing}; pass --k", path=path, line=line)
    return int(chosen)


def on_both_paths(what, *, path, line):
    """The refusal of a launch on ``line`` that runs on both sides of ``EVAL_ONLY``."""
    from goldenal.core.errors import PolicyError

    return PolicyError(f"{what} on line {line} runs on both the EVAL_ONLY=true path and the "
                       "benchmark path, so a knob added there would be active during eval "
                       "runs; add it under an EVAL_ONLY guard by hand", path=path, line=line)


def on_eval_path(name, *, path, line):
    """The refusal of a knob set on the ``EVAL_ONLY=true`` path (real verification there)."""
    from goldenal.core.errors import PolicyError

    return PolicyError(f"{name} is set on the EVAL_ONLY=true path, which must keep real "
                       "verification; remove it there first", path=path, line=line)


def _script_k(text, rows, variables):
    """K as the first uncommented of ``rows`` sets it (else ``NUM_SPEC_TOKENS``), or None."""
    from goldenal.recipes import knobs
    from goldenal.recipes.shell import resolve

    k_match = next((km for _, km in knobs.finditer(text, rows)), None)
    k_text = resolve(k_match.group("value").rstrip(",\\"), variables) if k_match else None
    if k_text is None:
        k_text = variables.get("NUM_SPEC_TOKENS")
    return int(k_text) if k_text and k_text.isdigit() else None
