"""Structural diff of two JSON payloads: deepdiff, guided by subtree hashes.

:func:`payload_diff` returns the :class:`Change` list between two JSON values (tool
arguments and results, snapshot compositions, final outputs). How it works:

1. **Subtree hashes.** Every container met gets a 128-bit BLAKE2b digest of its
   canonical serialization (orjson, sorted keys — C speed), memoised; where orjson cannot
   be exact (its output holds ``null``, which NaN and ±Infinity also become, or it
   refuses the value) an exact bottom-up digest is used instead (type tag, sorted keys,
   children's digests). Digests are type-exact the way deepdiff is: ``1``, ``1.0`` and
   ``true`` differ; ``NaN`` equals ``NaN`` (and the tagged form ``{"$nonfinite": "NaN"}``
   that importers write, :mod:`core.record.jsonvalues`, is plain JSON, so it compares equal
   too). Values must be JSON (dict, list, str, int, float, bool, None).
2. **deepdiff walks, the hashes guide.** ``DeepDiff`` runs with a custom operator that,
   at every pair of containers, stops at once when the two digests are equal — so
   identical subtrees are never walked. In the default mode the operator also handles
   the containers itself: a dict reports its added and removed keys and descends only
   into keys whose digests differ; a list is aligned by item digests (scalars by their
   type and value) with :func:`core.analysis.align.align` (Myers LCS), so an item inserted at the
   front of a long list is one insertion, not N positional changes (plain deepdiff pairs
   lists of containers by position, and its difflib pass on lists of scalars compares
   with Python's ``==``, where ``true == 1 == 1.0``). Items left unmatched on both sides
   of a gap are paired by position and compared deeper. Leaves are compared by deepdiff.
3. **Pinned options.** ``threshold_to_diff_deeper=0`` — deepdiff ≥ 8 otherwise reports a
   whole dict as one "changed" value when few keys are shared (the "root changed"
   collapse); ``ignore_order=False`` (order matters in traces, so no pairing heuristics);
   ``ignore_nan_inequality=True``.

Paths are JSON Pointers (RFC 6901): ``""`` is the whole value, ``/a/0/b`` a member.
``removed`` and ``changed`` paths point into the *old* value, ``added`` paths into the
*new* one (deepdiff's convention); a ``changed`` whose place in the new value differs
(list items shifted) also carries ``new_path``.

``align_lists="deepdiff"`` keeps deepdiff's own list pairing everywhere (only the hash
skip is added): its findings are exactly plain ``DeepDiff``'s with the same options, which
a hypothesis test checks on random JSON — the guidance changes the cost, not the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from hashlib import blake2b
from typing import Any

import orjson
from deepdiff import DeepDiff
from deepdiff.helper import notpresent
from deepdiff.model import DictRelationship, SubscriptableIterableRelationship

from .align import align, opcodes

__all__ = ["PINNED_OPTIONS", "Change", "findings_of", "payload_diff", "plain_deepdiff", "pointer", "subtree_digest"]

#: deepdiff options every payload diff uses (see module docstring).
PINNED_OPTIONS: dict[str, Any] = {
    "threshold_to_diff_deeper": 0,
    "ignore_order": False,
    "ignore_nan_inequality": True,
    "verbose_level": 2,
    "view": "tree",
    "cache_size": 0,
}

_MISSING = object()


@dataclass(frozen=True)
class Change:
    """One difference: ``op`` ∈ added|removed|changed|moved, ``path`` (JSON Pointer),
    ``old`` / ``new`` values (absent side omitted from :meth:`to_json`); ``new_path`` for
    ``moved``, and for ``changed`` when the new value sits at another place."""

    op: str
    path: str
    old: Any = _MISSING
    new: Any = _MISSING
    new_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.op, "path": self.path}
        if self.old is not _MISSING:
            d["old"] = self.old
        if self.new is not _MISSING:
            d["new"] = self.new
        if self.new_path is not None:
            d["new_path"] = self.new_path
        return d

    def __repr__(self) -> str:  # compact, for test failures
        parts = [self.op, repr(self.path)]
        if self.old is not _MISSING:
            parts.append(f"old={self.old!r}")
        if self.new is not _MISSING:
            parts.append(f"new={self.new!r}")
        return f"Change({', '.join(parts)})"


def pointer(tokens: list[Any]) -> str:
    """JSON Pointer (RFC 6901 §3) of a list of keys/indexes: ``~`` → ``~0``, ``/`` → ``~1``."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


# --------------------------------------------------------------------------- hashing


def _leaf_bytes(v: Any) -> bytes:
    t = type(v)
    if t is str:
        b: bytes = v.encode("utf-8", "surrogatepass")
        return b"s%d:" % len(b) + b
    if t is bool:
        return b"T" if v else b"F"
    if t is int:
        return b"i%d;" % v
    if t is float:
        if math.isnan(v):
            return b"fnan;"
        return b"f" + repr(v).encode() + b";"
    if v is None:
        return b"n"
    return b"o" + repr(v).encode("utf-8", "surrogatepass") + b";"


class _Digests:
    """Subtree tokens, memoised by ``id()`` (the values outlive the diff).

    Fast path: a container's token is the BLAKE2b digest of its ``orjson`` serialization
    with sorted keys (C speed; exact for JSON values: ``1``/``1.0``/``true`` differ). orjson
    writes NaN and ±Infinity as ``null``, so a serialization that contains ``null`` — or
    that orjson refuses (lone surrogates, huge integers, non-string keys) — falls back to
    the exact bottom-up digest (:meth:`exact`). The two kinds of token never compare
    equal to each other, which only costs a descent, never a missed difference.
    """

    def __init__(self) -> None:
        self.memo: dict[int, bytes] = {}
        self.exact_memo: dict[int, bytes] = {}

    def of(self, v: Any) -> bytes:
        t = type(v)
        if t is dict or t is list:
            i = id(v)
            d = self.memo.get(i)
            if d is None:
                try:
                    data: bytes | None = orjson.dumps(v, option=orjson.OPT_SORT_KEYS)
                except TypeError:  # orjson.JSONEncodeError is a TypeError
                    data = None
                if data is not None and b"null" not in data:
                    d = b"j" + blake2b(data, digest_size=16).digest()
                else:
                    d = b"x" + self.exact(v)
                self.memo[i] = d
            return d
        return b"x" + self.exact(v)

    def exact(self, v: Any) -> bytes:
        """Bottom-up digest: type tag, sorted keys (length-prefixed), children's digests
        or leaf values (NaN equals NaN; ``1``, ``1.0``, ``true`` differ)."""
        t = type(v)
        if t is dict:
            d = self.exact_memo.get(id(v))
            if d is None:
                parts = [b"{"]
                for k in sorted(v):
                    kb = str(k).encode("utf-8", "surrogatepass")
                    parts.append(b"%d:" % len(kb))
                    parts.append(kb)
                    c = v[k]
                    tc = type(c)
                    parts.append(self.exact(c) if (tc is dict or tc is list) else _leaf_bytes(c))
                d = blake2b(b"".join(parts), digest_size=16).digest()
                self.exact_memo[id(v)] = d
            return d
        if t is list:
            d = self.exact_memo.get(id(v))
            if d is None:
                parts = [b"["]
                for c in v:
                    tc = type(c)
                    parts.append(self.exact(c) if (tc is dict or tc is list) else _leaf_bytes(c))
                d = blake2b(b"".join(parts), digest_size=16).digest()
                self.exact_memo[id(v)] = d
            return d
        return blake2b(_leaf_bytes(v), digest_size=16).digest()

    def key(self, v: Any) -> Any:
        """Alignment key of a list item: digest of a container, tagged value of a scalar."""
        t = type(v)
        if t is dict or t is list:
            return self.of(v)
        if t is float and math.isnan(v):
            return ("nan",)
        return (t.__name__, v)


def subtree_digest(value: Any) -> str:
    """Hex digest of ``value`` as :func:`payload_diff` hashes it (equal ⇔ no difference,
    up to a 2⁻¹²⁸ collision chance)."""
    return _Digests().exact(value).hex()


# --------------------------------------------------------------------------- the guide


class _HashGuide:
    """deepdiff custom operator: skip equal subtrees; in ``hash`` mode, own dicts/lists."""

    def __init__(self, digests: _Digests, own_containers: bool) -> None:
        self.d = digests
        self.own = own_containers

    def match(self, level: Any) -> bool:
        t1, t2 = type(level.t1), type(level.t2)
        return t1 is t2 and (t1 is dict or t1 is list)

    def give_up_diffing(self, level: Any, diff_instance: Any) -> bool:
        t1, t2 = level.t1, level.t2
        if t1 is t2 or self.d.of(t1) == self.d.of(t2):
            return True
        if not self.own:
            return False
        if type(t1) is dict:
            self._dict(level, diff_instance, t1, t2)
            return True
        self._list(level, diff_instance, t1, t2)
        return True

    def _dict(self, level: Any, dd: Any, t1: dict[Any, Any], t2: dict[Any, Any]) -> None:
        for k, y in t2.items():
            if k not in t1:
                dd.custom_report_result(
                    "dictionary_item_added",
                    level.branch_deeper(
                        notpresent,
                        y,
                        child_relationship_class=DictRelationship,
                        child_relationship_param=k,
                        child_relationship_param2=k,
                    ),
                )
        for k, x in t1.items():
            if k not in t2:
                dd.custom_report_result(
                    "dictionary_item_removed",
                    level.branch_deeper(
                        x,
                        notpresent,
                        child_relationship_class=DictRelationship,
                        child_relationship_param=k,
                        child_relationship_param2=k,
                    ),
                )
        of = self.d.of
        for k, x in t1.items():
            if k in t2:
                y = t2[k]
                tx, ty = type(x), type(y)
                if tx is ty and (tx is dict or tx is list) and (x is y or of(x) == of(y)):
                    continue
                dd._diff(
                    level.branch_deeper(
                        x,
                        y,
                        child_relationship_class=DictRelationship,
                        child_relationship_param=k,
                        child_relationship_param2=k,
                    ),
                    frozenset(),
                )

    def _list(self, level: Any, dd: Any, t1: list[Any], t2: list[Any]) -> None:
        key = self.d.key
        matches = align([key(x) for x in t1], [key(y) for y in t2])
        rel = SubscriptableIterableRelationship
        for tag, i1, i2, j1, j2 in opcodes(matches, len(t1), len(t2)):
            if tag == "equal":
                continue
            n = min(i2 - i1, j2 - j1)
            for t in range(n):  # replace block: pair by position, look deeper
                dd._diff(
                    level.branch_deeper(
                        t1[i1 + t],
                        t2[j1 + t],
                        child_relationship_class=rel,
                        child_relationship_param=i1 + t,
                        child_relationship_param2=j1 + t,
                    ),
                    frozenset(),
                )
            for i in range(i1 + n, i2):
                dd.custom_report_result(
                    "payload_item_removed",
                    level.branch_deeper(
                        t1[i],
                        notpresent,
                        child_relationship_class=rel,
                        child_relationship_param=i,
                        child_relationship_param2=i,
                    ),
                )
            for j in range(j1 + n, j2):
                dd.custom_report_result(
                    "payload_item_added",
                    level.branch_deeper(
                        notpresent,
                        t2[j],
                        child_relationship_class=rel,
                        child_relationship_param=j,
                        child_relationship_param2=j,
                    ),
                )


# --------------------------------------------------------------------------- results


_OPS = {
    "values_changed": "changed",
    "type_changes": "changed",
    "dictionary_item_added": "added",
    "dictionary_item_removed": "removed",
    "iterable_item_added": "added",
    "iterable_item_removed": "removed",
    "iterable_item_moved": "moved",
    # our own list reports: deepdiff would merge an iterable_item_removed and an
    # iterable_item_added that share an index into one "values_changed" (its
    # mutual_add_removes_to_become_value_changes), though they are different items
    "payload_item_added": "added",
    "payload_item_removed": "removed",
}


_OP_RANK = {"removed": 0, "changed": 1, "moved": 2, "added": 3}


def _sort_key(c: Change) -> tuple[Any, ...]:
    toks = []
    for t in c.path.split("/")[1:]:
        # list indices are ASCII digits; a key such as "³" is a digit to str.isdigit but not to int()
        toks.append((0, int(t), "") if t.isascii() and t.isdigit() else (1, 0, t))
    return (toks, _OP_RANK.get(c.op, 9))


def findings_of(tree: Any) -> list[Change]:
    """Translate a deepdiff tree result into sorted :class:`Change` objects (JSON Pointer
    paths). Raises ``ValueError`` for a report type JSON values cannot produce."""
    out: list[Change] = []
    for report_type, levels in tree.items():
        op = _OPS.get(report_type)
        if op is None:
            if levels:
                raise ValueError(f"unexpected deepdiff report {report_type!r}")
            continue
        for lv in levels:
            if op == "added":
                out.append(Change("added", pointer(lv.path(output_format="list", use_t2=True)), new=lv.t2))
            elif op == "removed":
                out.append(Change("removed", pointer(lv.path(output_format="list")), old=lv.t1))
            elif op == "moved":
                out.append(
                    Change(
                        "moved",
                        pointer(lv.path(output_format="list")),
                        old=lv.t1,
                        new=lv.t2,
                        new_path=pointer(lv.path(output_format="list", use_t2=True, reporting_move=True)),
                    )
                )
            else:
                p_old = pointer(lv.path(output_format="list"))
                p_new = pointer(lv.path(output_format="list", use_t2=True))
                out.append(Change("changed", p_old, old=lv.t1, new=lv.t2, new_path=p_new if p_new != p_old else None))
    out.sort(key=_sort_key)
    return out


def payload_diff(old: Any, new: Any, *, align_lists: str = "hash") -> list[Change]:
    """Differences from ``old`` to ``new`` (JSON values), as sorted :class:`Change` s.

    ``align_lists``: ``"hash"`` (default) aligns lists by item digest (one insertion
    stays one insertion); ``"deepdiff"`` keeps deepdiff's positional
    pairing (findings equal plain ``DeepDiff(old, new, **PINNED_OPTIONS)``).
    An empty list means the values are equal (NaN equals NaN).
    Raises ``ValueError`` for an unknown ``align_lists``.
    """
    if align_lists not in ("hash", "deepdiff"):
        raise ValueError(f"align_lists must be 'hash' or 'deepdiff', not {align_lists!r}")
    digests = _Digests()
    t1, t2 = type(old), type(new)
    if t1 is t2 and (t1 is dict or t1 is list) and digests.of(old) == digests.of(new):
        return []
    if t1 is t2 and t1 is float and math.isnan(old) and math.isnan(new):
        return []
    guide = _HashGuide(digests, own_containers=(align_lists == "hash"))
    dd = DeepDiff(old, new, custom_operators=[guide], **PINNED_OPTIONS)
    return findings_of(dd.tree)


def plain_deepdiff(old: Any, new: Any) -> list[Change]:
    """Plain ``DeepDiff`` with :data:`PINNED_OPTIONS` (no guidance), as Changes — the
    reference the tests and the benchmark compare against."""
    return findings_of(DeepDiff(old, new, **PINNED_OPTIONS).tree)
