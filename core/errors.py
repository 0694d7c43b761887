"""Typed errors of the core library.

Every error carries a short ``title`` (the area) and a human message. The CLI prints
``str(error)`` on one line and exits 2; the app shows it in a modal.
"""

from __future__ import annotations

from typing import Any


def printable(name: str) -> str:
    """``name`` for a one-line message: control characters (newlines in a file name, say)
    escaped as ``\\n``/``\\xNN``, everything else as is."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def name_text(name: str) -> str:
    """A file name as valid Unicode text, to store or show: the bytes of a name that are
    not UTF-8 (decoded by Python as lone surrogates, PEP 383 ``surrogateescape``) written
    as ``\\xNN``; a valid name is returned as is."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


_POINTER_HEAD = 8
_POINTER_TAIL = 2


def short_pointer(path: str) -> str:
    """A JSON Pointer (RFC 6901) for a one-line message: ``path`` itself when it has at
    most 12 reference tokens, else its first 8 and last 2 tokens around ``/…(N more)…``
    (a pointer into a value nested hundreds of levels deep is mostly one repeated
    chain). A reference token never holds a raw ``/`` (RFC 6901 §3 escapes it as ``~1``),
    so splitting on ``/`` finds the tokens. Control characters in a token (a key holding a
    newline) are escaped (:func:`printable`), so the message stays one line."""
    tokens = path.split("/")[1:] if path.startswith("/") else []
    if len(tokens) <= _POINTER_HEAD + _POINTER_TAIL + 2:
        return printable(path)
    head = "".join("/" + t for t in tokens[:_POINTER_HEAD])
    tail = "".join("/" + t for t in tokens[-_POINTER_TAIL:])
    return printable(f"{head}/…({len(tokens) - _POINTER_HEAD - _POINTER_TAIL} more)…{tail}")


def invalid_text(value: object) -> str | None:
    """The first string inside ``value`` (a string, or a JSON-like dict/list/tuple)
    that is not valid Unicode text — it holds a lone UTF-16 surrogate, which is how
    Python decodes the bytes of a file name or command-line argument that are not
    UTF-8 (PEP 383 ``surrogateescape``) — or ``None``. Such text has no UTF-8 form, so
    neither SQLite nor a JSON file can store it."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return v
        elif isinstance(v, dict):
            todo.extend(v.keys())
            todo.extend(v.values())
        elif isinstance(v, (list, tuple)):
            todo.extend(v)
    return None


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    """An exception of ``cls`` with ``args`` and no ``__init__`` run (unpickling)."""
    exc = cls.__new__(cls)
    exc.args = args
    return exc


class InspectorError(Exception):
    """Base of every error the core raises on purpose.

    ``title`` names the area ("format", "canonicalization", ...); ``str(err)`` is the
    one-line message a user reads.
    """

    title = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled to and from worker processes: rebuilt as it is (its args and every
        # attribute, a subclass's own too), without running ``__init__`` again
        return (_rebuilt, (type(self), self.args), self.__dict__)


class CanonicalizationError(InspectorError, ValueError):
    """A value has no deterministic RFC 8785 canonical form.

    Raised for NaN, ±Infinity, integers outside ±(2**53 - 1) (RFC 8785 §3.2.2.3 via
    I-JSON, RFC 7493 §2.2), lone surrogates, bytes, sets, non-string object keys and
    arbitrary objects. ``path`` is the JSON Pointer (RFC 6901) of the offending value.
    """

    title = "canonicalization"

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path
        where = short_pointer(path) if path else "/"
        super().__init__(f"cannot canonicalize value at {where}: {reason}")


#: the longest reason a FormatError's message shows, characters (``reason`` keeps it whole)
MAX_REASON = 2000


class FormatError(InspectorError, ValueError):
    """A recording was rejected rather than misread.

    ``file`` is the path (or ``"<bytes>"``/``"<dict>"``), ``record`` the record index
    (``None`` for the header), ``path`` a JSON Pointer (RFC 6901) inside the document,
    ``reason`` the cause. ``str()`` joins them: ``FILE at record 3, /records/3/seq: reason``
    (a pointer of more than 12 tokens shortened by :func:`short_pointer`; ``path`` keeps
    it whole).
    """

    title = "format"

    def __init__(
        self,
        reason: str,
        *,
        file: str | None = None,
        record: int | None = None,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.reason = reason
        self.file = file
        self.record = record
        self.path = path
        self.line = line
        self.column = column
        super().__init__(self._compose())

    def _compose(self) -> str:
        where: list[str] = []
        if self.line is not None:
            where.append(f"line {self.line}, column {self.column}")
        if self.record is not None:
            where.append(f"record {self.record}")
        if self.path:
            where.append(short_pointer(self.path))
        place = " at " + ", ".join(where) if where else ""
        reason = self.reason
        if len(reason) > MAX_REASON:  # a recorded value quoted whole (a kind of 10 MB)
            reason = f"{reason[: MAX_REASON - 1]}… ({len(reason):,} characters)"
        return f"{printable(self.file or '<input>')}{place}: {reason}"

    def with_file(self, file: str) -> FormatError:
        """Return a copy naming ``file`` (used when a lower layer did not know it)."""
        return FormatError(
            self.reason,
            file=file,
            record=self.record,
            path=self.path,
            line=self.line,
            column=self.column,
        )


class ReplayMismatch(InspectorError, LookupError):
    """A replayed call found no recorded answer.

    ``kind`` is ``"tool"`` or ``"model"``, ``key`` the canonical key, ``recorded`` the
    number of recorded interactions of that kind, ``reason`` is ``"exhausted"`` (the key
    was recorded but every answer was consumed) or ``"missing"`` (never recorded).
    """

    title = "replay mismatch"

    def __init__(self, kind: str, key: str, recorded: int, reason: str, detail: str = "") -> None:
        self.kind = kind
        self.key = key
        self.recorded = recorded
        self.reason = reason
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"no recorded {kind} answer for key {key}: {reason}{extra}; {recorded} {kind} interaction(s) recorded"
        )


class PolicyDenied(InspectorError, PermissionError):
    """A tool call was refused by authorization, approval or budget (live or replayed)."""

    title = "policy"

    def __init__(self, tool: str, reason: str) -> None:
        self.tool = tool
        self.reason = reason
        super().__init__(f"tool {tool!r} denied: {reason}")


class OutputError(InspectorError, OSError):
    """An output file could not be written (names the file and the reason).

    Also an ``OSError``, so callers that handle I/O errors keep working.
    """

    title = "output"

    def __init__(self, file: str, reason: str) -> None:
        self.file = file
        self.reason = reason
        InspectorError.__init__(self, f"{printable(file)}: {reason}")

    def __str__(self) -> str:
        return self.message


class BranchError(InspectorError):
    """A branch or intervention is invalid against its base."""

    title = "branch"


class FixtureError(InspectorError):
    """A fixture or requirement operation failed."""

    title = "fixture"


class WorkspaceError(InspectorError):
    """The workspace database could not be opened or written."""

    title = "workspace"


class SourceImportError(InspectorError):
    """A source file could not be imported by any importer (see ``attempts``)."""

    title = "import"

    def __init__(self, message: str, attempts: dict[str, str] | None = None) -> None:
        self.attempts: dict[str, Any] = attempts or {}
        super().__init__(message)


class AnalysisError(InspectorError):
    """A diff, metric or audit could not be computed (bad price table, outcome predicate,
    or input); the message names the file or spec and the reason."""

    title = "analysis"
