"""Find every speculative-decoding site of a serve config file or srt-slurm recipe,
for ``inject`` and ``audit`` alike."""

import itertools
import math
import os
from dataclasses import dataclass
from functools import cached_property

from goldenal.recipes import spans
from goldenal.core.errors import ParseError
from goldenal.core.files import read_text
from goldenal.engines.setting import Site

ROLES = ("aggregated", "prefill", "decode")


def recipe_adapters():
    """The adapters of the engines srt-slurm recipes configure (``backend_types`` set), in order."""
    from goldenal.engines.knobs import MODULES

    return [m.ADAPTER for m in MODULES.values() if m.ADAPTER.backend_types]


# engine -> the key of its worker settings in a recipe's ``backend``
ENGINE_CONFIG = {a.name: f"{a.name}_config" for a in recipe_adapters()}
# the keys of a serve config's speculative mapping, every engine's
SPEC_KEYS = tuple(dict.fromkeys(k for a in recipe_adapters() for k in a.record.spec_config))


@dataclass
class Document:
    """A composed YAML/JSON file; node offsets index ``text``."""

    path: str
    text: str
    root: object

    @classmethod
    def parse(cls, path, text=None, *, keep=None, first=False):
        """Read (unless ``text`` is given) and compose a file; ``keep``: the top-level sections
        to read (read-back only); ``first``: a stream's first document."""
        path = os.fspath(path)
        if text is None:
            text = read_text(path)
        if keep is not None:
            sliced = spans.keep_sections(text, keep)
            if sliced is not None:
                try:
                    return cls(path, sliced, spans.compose(sliced, path, first=first))
                except ParseError:
                    pass
        return cls(path, text, spans.compose(text, path, first=first))

    @cached_property
    def sections(self):
        """:func:`sections_of` the root, found once."""
        return sections_of(self.root, self.path)


@dataclass
class Section:
    name: "str | None"
    node: object
    base: "Section | None" = None

    def get(self, *keys):
        """The value at ``keys`` as this variant runs it (override over base)."""
        node = self.node if self.base is None else spans.Layers(self.node, self.base.node)
        return spans.get(node, *keys)

    def own(self, *keys):
        return spans.get(self.node, *keys)


# The sections srt-slurm runs beside ``base``; other keys there are not variants
# (``_expand_override_variants`` in its ``src/srtctl/core/config.py``).
VARIANT_PREFIXES = ("override_", "zip_override_")


def sections_of(root, path=None):
    """A recipe's sections: itself, or ``base`` and each variant layered over it (a
    ``zip_override_*`` section gives one per index, ``name[i]`` where it gives several)."""
    if not spans.is_map(root):
        return None
    if _serves(root):
        sweep = spans.get(root, "sweep")
        if spans.is_map(sweep):
            return [Section(_combination_name(params), spans.Swept(root, params, path=path))
                    for params in _combinations(sweep, path)]
        return [Section(None, root)]
    base_node = spans.get(root, "base")
    if spans.is_map(base_node) and _serves(base_node):
        base = Section("base", base_node)
        out = [base]
        for key, value in spans.pairs(root):
            if not (spans.is_scalar(key) and key.value.startswith(VARIANT_PREFIXES)
                    and spans.is_map(value) and value is not base_node):
                continue
            if not key.value.startswith("zip_"):
                out.append(Section(key.value, value, base))
                continue
            n = spans.zip_length(value, path)
            out.extend(Section(key.value if n == 1 else f"{key.value}[{i}]",
                               spans.ZipSlice(value, i), base) for i in range(n))
        return out
    return None


def scenario_facts(root, sections=None):
    """``(name, benchmark, names)``: what a recipe says of its scenario (agentic or not)."""
    def text(node):
        return spans.scalar(node) if spans.is_scalar(node) else None

    sections = sections_of(root) if sections is None else sections
    if not sections:
        return None, None, ()
    top = sections[0]
    name = text(top.get("name"))
    benchmark = {key: text(top.get("benchmark", key))
                 for key in ("type", "isl", "osl", "command")}
    names = []
    for sec in sections:
        if sec.name not in (None, "base"):
            names.append(sec.name)
        node = sec.own("name")
        if spans.is_scalar(node):
            names.append(text(node))
        elif node is not None and node.id == "sequence":
            names.extend(text(item) for item in node.value if spans.is_scalar(item))
    return name, benchmark, tuple(n for n in names if n)


# A sweep is a Cartesian product; past this many combinations it is refused, not read.
MAX_SWEEP = 256


def _combinations(sweep, path):
    """Each combination of a ``sweep`` (name -> value node), in srtctl's order
    (``itertools.product`` over the parameters as written)."""
    names, lists = [], []
    for key, values in spans.pairs(sweep):
        if not (spans.is_scalar(key) and values.id == "sequence" and values.value):
            raise ParseError("a sweep parameter is a non-empty list of values", path=path,
                             line=spans.line_of(values))
        names.append(key.value)
        lists.append(values.value)
    count = math.prod(len(values) for values in lists)
    if count > MAX_SWEEP:
        raise ParseError(f"a sweep of {count} combinations; goldenal reads at most "
                         f"{MAX_SWEEP}", path=path, line=spans.line_of(sweep))
    return [dict(zip(names, combo)) for combo in itertools.product(*lists)]


def _combination_name(params):
    return "sweep[" + ", ".join(f"{name}={spans.python_str(value)}"
                                for name, value in params.items()) + "]"


def _serves(node):
    """Whether a recipe (or its ``base``) configures workers: a ``backend`` block, or the
    2.0 layout's ``roles`` block."""
    return any(spans.is_map(spans.get(node, key)) for key in ("backend", "roles"))


# The 2.0 layout's role names (``ROLE_TO_MODE`` in NVIDIA/srt-slurm src/srtctl/core/roles.py)
V2_ROLES = {"aggregated": "agg", "prefill": "prefill", "decode": "decode"}


@dataclass(frozen=True)
class RolePlaces:
    """Where a recipe writes one role's engine settings and environment: the 1.x layout's
    ``backend.<engine>_config.<role>`` and ``backend.<role>_environment``, or the 2.0
    layout's ``roles.<role>.args`` and ``roles.<role>.env`` (``expand_roles`` in
    NVIDIA/srt-slurm src/srtctl/core/roles.py maps the one onto the other)."""

    config: tuple
    holder: tuple
    env_key: str

    @property
    def env(self):
        return (*self.holder, self.env_key)

    @classmethod
    def of(cls, section, engine, role):
        if spans.is_map(section.get("roles")):
            return cls(("roles", V2_ROLES[role], "args"), ("roles", V2_ROLES[role]), "env")
        return cls(("backend", f"{engine}_config", role), ("backend",), f"{role}_environment")


def _model_names(section):
    keys = (("model", "path"), ("identity", "model", "repo"), ("model", "repo"))
    return list(filter(None, (spans.scalar(section.get(*path)) for path in keys)))


def _engine_type(section, path=None):
    """The engine a recipe names: ``backend.type``, or the 2.0 layout's ``engine`` (a name
    or a mapping with ``type``) or its roles' ``engine``, SGLang when none says.  Roles
    srtctl does not know, and engines that disagree, are refused as srtctl refuses them
    (``expand_roles``, ``expand_engine`` and ``_engine_key`` in NVIDIA/srt-slurm
    src/srtctl/core/roles.py)."""
    said = section.get("backend", "type")
    roles = section.get("roles")
    if said is not None or not spans.is_map(roles):
        return (spans.scalar(said) or "").lower()
    engine = section.get("engine")
    named = {}      # engine -> the node naming it
    top = spans.get(engine, "type") if spans.is_map(engine) else engine
    if spans.scalar(top) is not None:
        named[spans.scalar(top)] = top
    for key, spec in spans.pairs(roles):
        if not (spans.is_scalar(key) and key.value in V2_ROLES.values()):
            raise ParseError(f"unknown role {spans.scalar(key) or '?'!r}: srtctl's roles are "
                             "prefill, decode and agg", path=path, line=spans.line_of(key))
        role_engine = spans.get(spec, "engine")
        if spans.scalar(role_engine) is not None:
            named.setdefault(spans.scalar(role_engine), role_engine)
    if len(named) > 1:
        first, second = list(named)[:2]
        raise ParseError(f"the roles name two engines, {first!r} and {second!r}: srtctl runs "
                         "one engine per recipe", path=path,
                         line=spans.line_of(named[second]))
    return (next(iter(named), None) or "sglang").lower()


def _engine_of(section, path=None):
    kind = _engine_type(section, path)
    for eng in recipe_adapters():
        if kind and any(word in kind for word in eng.backend_types):
            return eng
    for eng in recipe_adapters():
        if section.get("backend", f"{eng.name}_config") is not None:
            return eng
    return None


# The top-level sections of a recipe that say anything about its serving.
RECIPE_SECTIONS = frozenset(("name", "model", "identity", "backend", "container", "benchmark",
                             "engine", "roles", "sweep"))


def recipe_sites(doc, *, knob_only=False):
    """Sites of an srt-slurm recipe, None when the file is not one; ``knob_only``: a role
    setting the knob without speculative decoding too (``spec_on=False``)."""
    sections = doc.sections
    if sections is None:
        return None
    sites = []
    for section in sections:
        eng = _engine_of(section, doc.path)
        if eng is None:
            continue
        engine, env_knob = eng.name, eng.record.env_knob
        models = _model_names(section)
        for role in ROLES:
            places = RolePlaces.of(section, engine, role)
            cfg_own, env_own = section.own(*places.config), section.own(*places.env)
            if section.base is None:    # a plain recipe: nothing is layered
                cfg, env = cfg_own, env_own
            elif cfg_own is None and env_own is None:
                continue  # nothing of this role is written in the override
            else:
                cfg, env = section.get(*places.config), section.get(*places.env)
            site = None
            if cfg is not None:
                site = eng.site_from_recipe(doc, section, role, cfg, cfg_own, models)
            if (site is None and knob_only and env_knob
                    and spans.is_map(env) and spans.get(env, env_knob) is not None):
                site = Site(engine=engine, role=role, section=section.name,
                            spec=env if cfg is None else cfg, models=tuple(models),
                            spec_on=False)
            if site is None:
                continue
            site.cfg = cfg
            if section.base is not None and not site.extra.pop("_own", True) and env_own is None:
                continue
            site.env = env if spans.is_map(env) else None
            site.env_inherited = env_own is None and env is not None
            site.backend, site.env_key = section.own(*places.holder), places.env_key
            sites.append(site)
    return sites


def config_sites(doc, env_file=None):
    """Sites of a serve config file: the engine that claims its speculative config most."""
    root = doc.root
    spec_pair = spans.get_pair(root, SPEC_KEYS) if spans.is_map(root) else None
    if spec_pair is None:
        return []
    value = spec_pair[1]
    as_map = spans.to_python(value) if spans.is_map(value) else None
    eng = max(recipe_adapters(), key=lambda a: a.config_claim(as_map))
    return [eng.site_from_config(doc, root, value, env_file=env_file)]


def find_sites(path, text=None, *, env_file=None, recipe_only=False, knob_only=False):
    """``(document, sites, layout)``, layout ``"recipe"``, ``"config"`` or None
    (``recipe_only``: just a recipe's serving sections)."""
    if recipe_only:
        doc = Document.parse(path, text, keep=RECIPE_SECTIONS, first=True)
        sites = recipe_sites(doc, knob_only=knob_only)
        return doc, sites or [], ("recipe" if sites is not None else None)
    doc = Document.parse(path, text)
    sites = recipe_sites(doc, knob_only=knob_only)
    if sites is not None:
        return doc, sites, "recipe"
    sites = config_sites(doc, env_file=env_file)
    return doc, sites, ("config" if sites else None)


def read_settings(path, text=None):
    """Every :class:`~goldenal.engines.setting.SpecSetting` in a serve config file."""
    import dataclasses

    from goldenal.engines.knobs import adapter

    path = os.fspath(path)
    if path.lower().endswith((".sh", ".bash", ".args", ".cmd")):
        from goldenal.engines.shell import read_shell_settings

        return read_shell_settings(path, text)
    doc, sites, _ = find_sites(path, text)
    out = []
    for site in sites:
        setting = adapter(site.engine).setting(doc, site)
        if site.section is not None:
            # Which variant of a multi-variant recipe the setting belongs to.
            setting = dataclasses.replace(setting, extra={**setting.extra,
                                                          "section": site.section})
        out.append(setting)
    return out


def pd_decode(site, sites, role="decode"):
    """Is ``site`` the ``role`` of a pair whose decode worker sets K (docs/engines.md §2.4)?"""
    from goldenal.engines.knobs import adapter

    if site.role != role or not adapter(site.engine).decode_sets_k:
        return False
    other = "prefill" if role == "decode" else "decode"
    return any(s.engine == site.engine and s.role == other and s.section == site.section
               for s in sites)
