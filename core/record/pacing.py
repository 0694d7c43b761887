"""Yield points for long work on a worker thread (serializing, hashing and redacting the
events of a big replay).

CPython runs one thread at a time; a worker thread that keeps the interpreter busy for
seconds makes an interactive thread (the app's) wait for its turn at every step. The
loops of that work call :func:`pace` every few records; a thread that installed a pacer
(:func:`paced`) runs it there — the app's pacer sleeps while the user's key is being
handled, so the key is answered as fast as when nothing runs. Without a pacer
:func:`pace` does nothing (one thread-local lookup).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["EVERY", "pace", "paced"]

#: records between two yield points in the loops that call :func:`pace` (a few
#: milliseconds of work at most)
EVERY = 64

_local = threading.local()


def pace() -> None:
    """Run this thread's pacer, if it installed one (:func:`paced`)."""
    fn = getattr(_local, "pacer", None)
    if fn is not None:
        fn()


@contextmanager
def paced(pacer: Callable[[], None]) -> Iterator[None]:
    """Install ``pacer`` for the current thread while the block runs (the one before it
    comes back after). ``pacer`` must be quick when there is nothing to wait for."""
    before = getattr(_local, "pacer", None)
    _local.pacer = pacer
    try:
        yield
    finally:
        _local.pacer = before
