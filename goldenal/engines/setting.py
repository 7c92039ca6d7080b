"""What reading a file gives back (:class:`SpecSetting`, one per worker role), where one
is written (:class:`Site`) and what writing it needs (:class:`Plan`)."""

from dataclasses import dataclass, field

from goldenal.core.errors import ParseError
from goldenal.recipes import spans


@dataclass(frozen=True)
class SpecSetting:
    """One speculative-decoding setting found in a file; ``line``/``col``: of the knob, else
    of the spec config; ``value``: as written; ``extra``: companions and the ``section``."""

    path: str
    line: int
    col: int
    engine: str
    role: "str | None" = None
    knob: "str | None" = None
    value: "str | None" = None
    k: "int | None" = None
    draft: "str | None" = None
    method: "str | None" = None
    variant: dict = field(default_factory=dict)
    rejection_sample_method: "str | None" = None
    model: "str | None" = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """The edits writing one site; ``changes``: ``(knob, old or None, new)``."""

    edits: tuple = ()
    changes: tuple = ()
    warnings: tuple = ()


@dataclass
class Site:
    """One worker role's speculative settings and where they are written (``spec_on``: False
    for a role setting a knob but no speculative decoding)."""

    engine: str
    role: "str | None"
    section: "str | None"
    spec: object
    k: "int | None" = None
    k_node: object = None
    k_values: tuple = ()
    draft: "str | None" = None
    method: "str | None" = None
    variant: dict = field(default_factory=dict)
    models: tuple = ()
    env: object = None
    env_inherited: bool = False
    env_base: object = None     # the block a new one is merged over: what it need not repeat
    env_file: "str | None" = None
    backend: object = None      # the mapping a new environment block goes into
    env_key: "str | None" = None    # ... under this key
    extra: dict = field(default_factory=dict)
    cfg: object = None
    on: object = None
    spec_on: bool = True


def command_site(engine, found, k):
    """The site of a launch command read back as ``found`` (a SpecSetting or None), drafting K."""
    return Site(engine=engine, role=None, section=None, spec=None, k=k, k_values=(k,),
                draft=found.draft if found else None, method=found.method if found else None,
                models=(found.model,) if found and found.model else ())


def int_k(node, path):
    """K from a scalar or a zip-override list; returns (k, values)."""
    if node is None:
        return None, ()
    if node.id == "sequence":
        values = tuple(int_k(v, path)[0] for v in node.value)
        return (values[0] if len(set(values)) == 1 else None), values
    text = spans.scalar(node)
    if text is None:
        return None, ()
    try:
        k = int(text.strip().strip("'\""))
    except ValueError:
        raise ParseError(f"K must be an integer, got {text!r}", path=path,
                         line=spans.line_of(node)) from None
    return k, (k,)
