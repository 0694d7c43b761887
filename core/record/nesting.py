"""The nesting limit: how deeply arrays and objects may nest in a JSON value, and JSON
writing that works up to it.

**The rule.** Every JSON value nests arrays and objects at most :data:`MAX_DEPTH` =
1,000 levels deep. A value's own top is level 1, a container directly inside it level
2, and so on; scalars add no level (``"x"`` nests 0 levels, ``[]`` 1, ``{"a": [[1]]}``
3). The values are:

* in a recording: each member of the header, of a link, of a record, of a tool result,
  of a model request or response, of a chat message and of a tool call — ``metadata``,
  ``meta``, ``arguments``, a result's ``content``, a request's ``tools`` and
  ``options``, a message's ``content``, an interrupt's ``value``, ``composition``,
  ``details`` … — except the arrays and objects that are the format's own structure
  (:data:`core.record.io.RECORDING_VALUES`); the document itself nests at most 1,000
  levels plus those (8 at most);
* a source file an importer reads, and a JSON text an importer parses out of one of its
  strings: the whole document;
* a user's file (intervention, policy, fixture, ``--args-json``): the whole document; in
  a branch file, each intervention (so a branch holds any intervention file that was
  accepted).

A deeper value is refused with a :class:`~core.errors.FormatError` that names the file,
the JSON Pointer (RFC 6901) of the first container beyond the limit (shortened in the
message, which stays one line: :func:`core.errors.short_pointer`) and the limit. A
recording that would be written with a deeper value is refused the same way, so every
file written can be read back.

**Why 1,000.** Far beyond what real agent runs hold (a few dozen levels), and within
what every part of the program handles: orjson parses 1,024 levels of a document at
most, so a recording's 8 levels of structure fit. Up to the limit everything works —
load, save, import, keys and digest, every command and the app:

* :func:`values_exceeding` / :func:`check_values` find the first container beyond the
  limit without recursion, in a parsed document (:func:`exceeds` and
  :func:`depth_exceeded` in one value); :func:`text_values_exceeding` in a JSON text
  that a parser refused for its depth;
* :func:`dumps` is ``orjson.dumps``, byte for byte, also beyond the 254 levels orjson
  serializes (a hypothesis test compares them); :mod:`core.record.canonical` has the
  same fallback for RFC 8785 canonical JSON, held to the ``rfc8785`` package;
* :func:`json_mode_dump` is pydantic's ``model_dump(mode="json")``, also beyond the 254
  levels pydantic-core serializes;
* every other walk over a JSON value is a plain recursive function, run under a
  recursion limit of :data:`RECURSION_LIMIT` frames in threads with a stack of at least
  :data:`THREAD_STACK_SIZE` bytes: :func:`ensure_recursion_limit` sets both, and the
  command line (``main``, so the app and every ``serve`` session too), the sweep workers
  and core's readers (:func:`core.record.io.loads_recording`, the importers' parsers,
  :func:`core.record.userjson.loads_user_json`) call it.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

import orjson
from pydantic_core import to_jsonable_python

from ..errors import FormatError

__all__ = [
    "MAX_DEPTH",
    "RECURSION_LIMIT",
    "ORJSON_LEVELS",
    "THREAD_STACK_SIZE",
    "VALUE",
    "Each",
    "Pattern",
    "exceeds",
    "depth_exceeded",
    "values_exceeding",
    "text_values_exceeding",
    "check_values",
    "check_text",
    "depth_error",
    "depth_reason",
    "pointer",
    "dumps",
    "is_depth_failure",
    "json_mode_dump",
    "ensure_recursion_limit",
]

#: The most levels of arrays and objects a JSON document may nest (the top level is 1).
MAX_DEPTH: Final = 1000
#: The interpreter recursion limit every entry point runs with: ``MAX_DEPTH`` levels at 8
#: frames a level — twice what the deepest walk takes (deepdiff, in the payload diff of two
#: values nested 1,000 levels: about 4,100 frames) — plus the frames of the program around
#: the walk.
RECURSION_LIMIT: Final = 8 * MAX_DEPTH + 2000
#: The least stack size of threads (a Textual worker, say) started after
#: :func:`ensure_recursion_limit`: recursion through C code (``any()`` over a generator,
#: ``==`` of nested dicts, the ``json`` parser) uses the C stack, some hundred bytes a
#: frame; 64 MiB covers :data:`RECURSION_LIMIT` frames with room (it is reserved address
#: space, used only as deep as a walk goes).
THREAD_STACK_SIZE: Final = 64 * 1024 * 1024

#: (major, minor) of the orjson in use; unknown counts as affected (strict limit)
_ORJSON_RELEASE = tuple(int(n) for n in re.findall(r"\d+", getattr(orjson, "__version__", "99"))[:2])
#: The most levels of arrays and objects in a value handed to ``orjson.dumps`` whole;
#: :func:`dumps` and :mod:`core.record.canonical` write the containers of a deeper value
#: themselves and give orjson only subtrees within this. orjson's writer reserves room
#: in its output buffer ahead and then writes some bytes without checking it: on some
#: nested values they run past the buffer's end, a heap overflow that glibc reports only
#: later, elsewhere (``free(): invalid next size``, ``malloc(): invalid size
#: (unsorted)``, then SIGABRT — the flaky aborts of the deep property tests):
#:
#: * every version writes closing brackets unchecked: a run of about 140 of them (the
#:   end of a value nested that deep) overflows; 3.11.9 still does (orjson issue 636);
#: * 3.12.0 and 3.13.0 reserve 128 bytes a member when an array opens and write the
#:   numbers, booleans and nulls after a nested container unchecked: a value nested only
#:   8 levels, arrays ending with a few floats, overflows.
#:
#: So 64 levels before 3.12 and 5 from 3.12 on (crafted worst cases overflowed from 140
#: and from 8 levels). The 5 makes the writers slow on deep-ish values: pin ``orjson<3.12``.
ORJSON_LEVELS: Final = 64 if _ORJSON_RELEASE < (3, 12) else 5

_CONTAINERS = (dict, list, tuple)


def ensure_recursion_limit() -> None:
    """Raise the interpreter's recursion limit to :data:`RECURSION_LIMIT` and the stack
    size of threads started from now on to :data:`THREAD_STACK_SIZE`, when they are
    lower; never lowers either. Cheap: call it at every entry point."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        if threading.stack_size() < THREAD_STACK_SIZE:
            threading.stack_size(THREAD_STACK_SIZE)
    except (ValueError, RuntimeError):  # pragma: no cover - a platform without the setting
        pass


# --------------------------------------------------------------------------- where values are


class _Value:
    """The pattern of a JSON value held to the limit (its top is level 1)."""

    def __repr__(self) -> str:
        return "VALUE"


#: the pattern of a whole document that is one value (a source file, an intervention file)
VALUE: Final = _Value()


class Each:
    """The pattern of an array of the format's own structure whose every element has the
    pattern ``item``."""

    def __init__(self, item: Pattern) -> None:
        self.item = item

    def __repr__(self) -> str:
        return f"Each({self.item!r})"


#: Where a document's values are: :data:`VALUE` (the document is one value), a dict
#: (an object of the format's own structure: the pattern of each named member, every
#: other member a value) or :class:`Each` (an array of the format's structure).
Pattern = _Value | Each | dict[str, "Pattern"]


def _child_pattern(pattern: Pattern, token: str | int) -> Pattern:
    if isinstance(pattern, dict):
        return pattern.get(token, VALUE) if isinstance(token, str) else VALUE
    if isinstance(pattern, Each):
        return pattern.item if isinstance(token, int) else VALUE
    return VALUE


# --------------------------------------------------------------------------- finding


def _children(c: Any) -> Iterator[tuple[str | int, Any]]:
    return iter(c.items()) if type(c) is dict else enumerate(c)


def exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` holds a container nested deeper than ``limit`` levels (``value``
    itself is level 1): :func:`depth_exceeded` without the path, stopping at the first
    such container. Without recursion, about 1.6 s per GB of parsed JSON when nothing is
    found."""
    t = type(value)
    if t is not dict and t is not list and t is not tuple:
        return False
    if limit < 1:
        return True
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop = stack.pop
    push = stack.append
    while stack:
        c, d = pop()
        if d > limit:
            return True
        for v in c.values() if type(c) is dict else c:
            tv = type(v)
            if tv is dict or tv is list or tv is tuple:
                push((v, d + 1))
    return False


def depth_exceeded(value: Any, limit: int = MAX_DEPTH) -> list[str | int] | None:
    """The reference tokens (relative to ``value``) of the first container, in document
    order, nested deeper than ``limit`` levels (``value`` itself is level 1), or ``None``.
    Dicts, lists and tuples are containers; no recursion."""
    if not exceeds(value, limit):
        return None
    if limit < 1:
        return []
    iters = [_children(value)]
    tokens: list[str | int] = []
    while iters:
        for tok, child in iters[-1]:
            tc = type(child)
            if tc is dict or tc is list or tc is tuple:
                tokens.append(tok)
                if len(iters) + 1 > limit:
                    return tokens
                iters.append(_children(child))
                break
        else:
            iters.pop()
            if tokens:
                tokens.pop()
    return None  # pragma: no cover - exceeds() found one


def values_exceeding(doc: Any, pattern: Pattern = VALUE, *, limit: int = MAX_DEPTH) -> list[str | int] | None:
    """The reference tokens (from the top of ``doc``) of the first container nested more
    than ``limit`` levels inside one of the values that ``pattern`` locates, or ``None``.

    The format's own structure (the objects and arrays ``pattern`` describes) is walked
    along the pattern; a member the pattern does not name is a value, and so is a part
    of the document whose type the pattern does not expect."""
    if pattern is VALUE:
        return depth_exceeded(doc, limit)
    if isinstance(pattern, dict) and type(doc) is dict:
        for k, v in doc.items():
            found = values_exceeding(v, pattern.get(k, VALUE), limit=limit)
            if found is not None:
                return [k, *found]
        return None
    if isinstance(pattern, Each) and type(doc) in (list, tuple):
        for i, v in enumerate(doc):
            found = values_exceeding(v, pattern.item, limit=limit)
            if found is not None:
                return [i, *found]
        return None
    return depth_exceeded(doc, limit)


_TEXT_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{},:]', re.S)


def text_values_exceeding(
    data: bytes | bytearray | memoryview | str, pattern: Pattern = VALUE, *, limit: int = MAX_DEPTH
) -> list[str | int] | None:
    """:func:`values_exceeding` on the JSON text ``data``: for a document a parser refused
    for its depth (orjson stops at 1,024 levels, the ``json`` module at the recursion
    limit). Scans the structural characters outside strings, following ``pattern``, and
    stops at the first container beyond the limit; ``None`` when there is none (or the
    text ends first). About 4 s per 100 MB scanned (up to that container); only a
    refused document is scanned."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    elif not isinstance(data, bytes):
        data = bytes(data)
    # an open container: [is an array, index, key, pattern of its members or None, tokens to its value's top]
    stack: list[list[Any]] = []
    last_string: bytes | None = None
    for m in _TEXT_TOKEN.finditer(data):
        tok = m.group()
        c = tok[:1]
        if c == b'"':
            last_string = tok
            continue
        if c in (b"[", b"{"):
            if not stack:
                pat: Pattern | None = pattern
                anchor = 0
            else:
                top = stack[-1]
                token = top[1] if top[0] else top[2]
                if top[3] is None:
                    pat, anchor = None, top[4]
                else:
                    pat, anchor = _child_pattern(top[3], token if token is not None else ""), len(stack)
            expected = (isinstance(pat, dict) and c == b"{") or (isinstance(pat, Each) and c == b"[")
            if not expected:
                if pat is not None:  # the top of a value
                    anchor = len(stack)
                pat = None
            if pat is None and len(stack) + 1 - anchor > limit:
                return [e[1] if e[0] else e[2] for e in stack]
            stack.append([c == b"[", 0, None, pat, anchor])
        elif c in (b"]", b"}"):
            if not stack:
                return None
            stack.pop()
        elif c == b",":
            if stack:
                if stack[-1][0]:
                    stack[-1][1] += 1
                else:
                    stack[-1][2] = None
        elif c == b":" and stack and last_string is not None:
            stack[-1][2] = _decode_key(last_string)
        last_string = None
    return None


def _decode_key(tok: bytes) -> str:
    text = tok.decode("utf-8", "replace")
    try:
        key = json.loads(text)
    except ValueError:
        return text.strip('"')
    return key if isinstance(key, str) else text


def _escape(token: str | int) -> str:
    """One JSON Pointer reference token (RFC 6901 §3: ``~`` → ``~0``, ``/`` → ``~1``)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(tokens: list[str | int] | tuple[str | int, ...]) -> str:
    """The JSON Pointer (RFC 6901) of ``tokens``; ``"/"`` for none (the document)."""
    return "".join("/" + _escape(t) for t in tokens) or "/"


def depth_reason(limit: int = MAX_DEPTH) -> str:
    """The reason of a nesting error (one wording everywhere)."""
    return f"nested more than {limit} levels deep (arrays and objects; the limit is {limit} levels)"


def depth_error(
    tokens: list[str | int] | tuple[str | int, ...], *, source: str | None, prefix: str = "", limit: int = MAX_DEPTH
) -> FormatError:
    """The :class:`FormatError` for a document whose container at ``tokens`` (from the
    document's top) is the first beyond the limit; a pointer into a recording's records
    also names the record. ``prefix`` (a place in a larger source, e.g. a zip entry)
    goes before the pointer."""
    record = tokens[1] if len(tokens) >= 2 and tokens[0] == "records" and isinstance(tokens[1], int) else None
    return FormatError(depth_reason(limit), file=source, record=record, path=prefix + pointer(tokens))


def check_values(
    doc: Any,
    pattern: Pattern = VALUE,
    *,
    source: str | None,
    at: tuple[str | int, ...] = (),
    prefix: str = "",
    limit: int = MAX_DEPTH,
) -> None:
    """Raise :func:`depth_error` when a value of ``doc`` (located by ``pattern``) nests
    deeper than ``limit`` levels. ``at`` is the reference tokens of ``doc`` in its
    document (prefixed to the pointer), ``prefix`` a place before them."""
    found = values_exceeding(doc, pattern, limit=limit)
    if found is not None:
        raise depth_error((*at, *found), source=source, prefix=prefix, limit=limit)


def check_text(
    data: bytes | bytearray | memoryview | str,
    pattern: Pattern = VALUE,
    *,
    source: str | None,
    prefix: str = "",
    limit: int = MAX_DEPTH,
) -> None:
    """:func:`check_values` on a JSON text (see :func:`text_values_exceeding`)."""
    found = text_values_exceeding(data, pattern, limit=limit)
    if found is not None:
        raise depth_error(found, source=source, prefix=prefix, limit=limit)


# --------------------------------------------------------------------------- writing


#: how orjson words its refusal to parse a document nested too deeply (1,024 levels):
#: "depth limit exceeded" (3.12 and later), "recursion depth exceeded" (3.11 and earlier)
ORJSON_PARSE_DEPTH_MESSAGES = ("depth limit", "recursion depth exceeded")


def is_parse_depth_failure(exc: BaseException) -> bool:
    """True when ``exc`` is orjson's refusal to parse a document nested more than 1,024
    levels (:data:`ORJSON_PARSE_DEPTH_MESSAGES`), or a RecursionError."""
    text = str(exc)
    return isinstance(exc, RecursionError) or any(m in text for m in ORJSON_PARSE_DEPTH_MESSAGES)


def is_depth_failure(exc: BaseException) -> bool:
    """True when ``exc`` is orjson's (or pydantic-core's) refusal to serialize a value
    nested too deeply for it (orjson: 254 levels), as opposed to a value it cannot
    serialize at all."""
    text = str(exc)
    return "Recursion limit reached" in text or "Maximum serialization depth exceeded" in text


def dumps(value: Any, option: int = 0, default: Callable[[Any], Any] | None = None) -> bytes:
    """``orjson.dumps(value, default, option)`` for values nested deeper than orjson's 254
    levels too, with the same bytes (options ``OPT_INDENT_2``, ``OPT_SORT_KEYS`` and
    ``OPT_NON_STR_KEYS``; a hypothesis test holds the fallback to orjson's output).

    Beyond :data:`ORJSON_LEVELS` levels (orjson refuses 255, and overflows its buffer on
    some values nested less), containers are written here, depth first without
    recursion, and every part of them within that (a scalar, a subtree) is
    written by orjson; indented parts are re-indented (orjson escapes every newline in a
    string, so each newline byte it writes is layout).

    Raises:
        TypeError: what orjson raises for a value it cannot serialize.
    """
    if not exceeds(value, ORJSON_LEVELS):  # deeper, orjson may overflow its buffer
        try:
            return orjson.dumps(value, default, option=option)
        except TypeError as exc:
            if not is_depth_failure(exc):
                raise
    return _dumps_deep(value, option, default, try_whole=False)


def _dumps_deep(
    value: Any,
    option: int,
    default: Callable[[Any], Any] | None = None,
    *,
    try_whole: bool = True,
    use_orjson: bool = True,
) -> bytes:
    """:func:`dumps` without recursion. ``use_orjson=False`` writes every container here
    (only scalars go through orjson): the form the property test compares."""
    indent = bool(option & orjson.OPT_INDENT_2)
    sort = bool(option & orjson.OPT_SORT_KEYS)
    key_option = option & orjson.OPT_NON_STR_KEYS
    colon = b": " if indent else b":"
    out: list[bytes] = []
    # an open container: [items iterator, closing bracket, its level, is a dict, started]
    stack: list[list[Any]] = []

    def part(v: Any, level: int) -> bool:
        """Append ``v`` written by orjson; False when it is too deep for orjson."""
        try:
            b = orjson.dumps(v, default, option=option)
        except TypeError as exc:
            if not is_depth_failure(exc):
                raise
            return False
        out.append(b.replace(b"\n", b"\n" + b"  " * level) if indent and level else b)
        return True

    def write(v: Any, level: int, whole: bool) -> None:
        t = type(v)
        if t is not dict and t is not list and t is not tuple:
            part(v, level)
            return
        if whole and use_orjson and not exceeds(v, ORJSON_LEVELS) and part(v, level):
            return  # written by orjson: a subtree within ORJSON_LEVELS (orjson's overflow)
        if t is dict:
            items = [(orjson.dumps({k: 0}, option=key_option)[1:-3], item) for k, item in v.items()]
            if sort:
                items.sort(key=lambda kv: orjson.loads(kv[0]))
            if not items:
                out.append(b"{}")
                return
            out.append(b"{")
            stack.append([iter(items), b"}", level, True, False])
        else:
            if not v:
                out.append(b"[]")
                return
            out.append(b"[")
            stack.append([iter(v), b"]", level, False, False])

    write(value, 0, try_whole)
    while stack:
        frame = stack[-1]
        level = frame[2]
        nxt: Any = next(frame[0], _END)
        if nxt is _END:
            if indent:
                out.append(b"\n" + b"  " * level)
            out.append(frame[1])
            stack.pop()
            continue
        if frame[4]:
            out.append(b",")
        frame[4] = True
        if indent:
            out.append(b"\n" + b"  " * (level + 1))
        if frame[3]:
            out.append(nxt[0])
            out.append(colon)
            nxt = nxt[1]
        write(nxt, level + 1, True)
    return b"".join(out)


_END = object()


def json_mode_dump(dump: Callable[..., Any], **kwargs: Any) -> Any:
    """``dump(mode="json", **kwargs)`` (a pydantic ``model_dump`` or a ``TypeAdapter``'s
    ``dump_python``) for values nested deeper than pydantic-core's 254 levels too, with
    the same result: on that refusal the value is dumped in Python mode and converted here
    without recursion, each leaf by pydantic's own ``to_jsonable_python``."""
    try:
        return dump(mode="json", **kwargs)
    except ValueError as exc:
        if not is_depth_failure(exc):
            raise
    return _jsonable_deep(dump(mode="python", **kwargs))


def _jsonable_deep(value: Any) -> Any:
    def convert(v: Any) -> Any:
        t = type(v)
        if t is str or t is int or t is bool or v is None or (t is float and v - v == 0):
            return v
        if t is dict:
            return {}
        if t is list or t is tuple:
            return []
        return to_jsonable_python(v, inf_nan_mode="null")  # pydantic's default for JSON mode

    root = convert(value)
    todo: list[tuple[Any, Any]] = [(value, root)] if type(value) in _CONTAINERS else []
    while todo:
        src, dst = todo.pop()
        if type(src) is dict:
            for k, v in src.items():
                nv = convert(v)
                dst[k if type(k) is str else next(iter(to_jsonable_python({k: None})))] = nv
                if type(v) in _CONTAINERS:
                    todo.append((v, nv))
        else:
            for v in src:
                nv = convert(v)
                dst.append(nv)
                if type(v) in _CONTAINERS:
                    todo.append((v, nv))
    return root
