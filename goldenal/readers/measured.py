"""Per-request records written by ``goldenal measure`` (``requests_{on,off}_k{K}.jsonl``).

Counts are null where the engine gave none per request (the file then records
the workload, not windows); a request not ``"ok"`` is skipped with a remark.
"""

import json

from goldenal.readers import _io
from goldenal.readers._base import Context
from goldenal.core.observation import Observation

SCHEMA = "goldenal.measure/request-1"
NAME = "measure-requests"


def sniff(head: str) -> bool:
    return '"goldenal.measure/request-' in head


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read(path, ctx: Context):
    """One observation per measured request that carries counts."""
    counted = 0
    for number, text in enumerate(_io.read_text(path).splitlines(), 1):
        if not text.strip():
            continue
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            ctx.refuse(number, f"not valid JSON: {exc.msg} (truncated file?)")
            continue
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            ctx.refuse(number, f"not a {SCHEMA} record")
            continue
        rid = str(doc.get("request", number))
        if doc.get("status") != "ok":
            ctx.remark(number, f"request {rid} {doc.get('status', 'failed')}: "
                               f"{doc.get('error') or 'no reason given'}; not counted")
            continue
        drafts, accepted = doc.get("drafts"), doc.get("accepted")
        if drafts is None and accepted is None:
            continue
        if not _count(drafts) or not _count(accepted):
            ctx.refuse(number, f"request {rid}: drafts/accepted are not counts")
            continue
        k = doc.get("k") if _count(doc.get("k")) and doc.get("k") else None
        per_pos = doc.get("accepted_per_position")
        if per_pos is not None:
            if not isinstance(per_pos, list) or not all(map(_count, per_pos)):
                ctx.refuse(number, f"request {rid}: accepted_per_position is not a list "
                                   "of counts")
                continue
            if sum(per_pos) != accepted or any(b > a for a, b in zip(per_pos, per_pos[1:])) \
                    or (per_pos and per_pos[0] > drafts):
                ctx.refuse(number, f"request {rid}: accepted_per_position {per_pos} "
                                   f"disagrees with {accepted} accepted in {drafts} steps")
                continue
            if k is not None and len(per_pos) != k:
                ctx.refuse(number, f"request {rid}: {len(per_pos)} positions, K={k}")
                continue
            per_pos = tuple(per_pos)
        if drafts == 0:
            ctx.remark(number, f"request {rid}: no speculative steps")
            continue
        tokens = doc.get("draft_tokens")
        counted += 1
        yield Observation(ctx.path, number, str(doc.get("engine") or "unknown"), NAME, k,
                          drafts, tokens if _count(tokens) else None, accepted, per_pos,
                          None, None, None, rid, None,
                          {"prompt": doc.get("prompt"), "counts_from": doc.get("counts_from")})
