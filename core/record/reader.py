"""The one way the product reads a file it is given: regular files only.

Every file a command or the app opens — recordings, sources to import, intervention,
branch, policy, fixture, output, ``--args-json @FILE``, price-table and keymap files —
is read here. The file is opened without blocking (``O_NONBLOCK``: opening a FIFO for
reading never waits for a writer) and checked with ``fstat`` on the open descriptor, so
a FIFO, a character or block device (``/dev/zero``, ``/dev/stdin``), a socket or a
directory is refused with one line before a byte is read, and what is checked is what
is read (no race between a check and the open).

User JSON files (:data:`USER_JSON_LIMIT`) have a size limit; recordings and sources
have none (gigabyte runs are opened on purpose). docs/format.md, "Input files", is the
user's description of these rules.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from ..errors import FormatError, InspectorError

__all__ = [
    "USER_JSON_LIMIT",
    "InputFileError",
    "check_input",
    "describe_mode",
    "is_regular_file",
    "read_input",
    "read_input_head",
    "read_input_tail",
]

#: the largest user JSON file (intervention, branch, policy, fixture, output,
#: ``--args-json @FILE``, price table, keymap) read, in bytes: 64 MiB
USER_JSON_LIMIT = 64 * 1024 * 1024


class InputFileError(FormatError):
    """A file the product was given cannot be read: missing, not a regular file, too
    big for its kind, or unreadable. ``file`` names it; the message is one line."""


def describe_mode(mode: int) -> str:
    """What a non-regular file is, in words (``"a named pipe (FIFO)"``, ``"a character
    device"``, ...), from an ``st_mode``."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _article(what: str) -> str:
    """``a`` or ``an`` before ``what`` (a recording, an intervention file)."""
    return "an" if what[:1].lower() in "aeiou" else "a"


def _fail(error: Callable[[str], InspectorError] | None, path: str, reason: str) -> InspectorError:
    if error is None:
        return InputFileError(reason, file=path)
    return error(f"{path}: {reason}")


def _open_regular(
    path: str | os.PathLike[str],
    what: str,
    error: Callable[[str], InspectorError] | None,
) -> tuple[int, os.stat_result]:
    """An open descriptor of ``path`` (blocking mode restored) and its ``fstat``.

    Raises:
        InputFileError (or ``error(message)``): no such file, not a regular file, or
            cannot be opened (the system's reason).
    """
    name = os.fsdecode(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _fail(error, name, f"no such {what}") from None
    except IsADirectoryError:
        raise _fail(error, name, f"is a directory, not {_article(what)} {what}") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing without a reader
            raise _fail(error, name, f"is {describe_mode(os.stat(path).st_mode)}, not a regular file") from None
        raise _fail(error, name, f"cannot read {what}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = describe_mode(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                raise _fail(error, name, f"is a directory, not {_article(what)} {what}")
            raise _fail(error, name, f"is {kind}, not a regular file (nothing was read from it)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _limit_reason(size: int, limit: int, what: str) -> str:
    article = "an" if what[:1].lower() in "aeiou" else "a"
    return (
        f"is {size / 1024 / 1024:,.1f} MiB; {article} {what} may be at most {limit / 1024 / 1024:,.0f} MiB "
        "(docs/format.md, 'Input files')"
    )


def read_input(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    limit: int | None = None,
    error: Callable[[str], InspectorError] | None = None,
) -> bytes:
    """The bytes of the regular file ``path``.

    ``what`` names the kind of file in messages (``"intervention file"``); ``limit`` is
    the largest size accepted, in bytes (``None``: no limit; user JSON files pass
    :data:`USER_JSON_LIMIT`), checked before reading and again while reading (a file
    that grows past it is refused too).

    Raises:
        InputFileError: no such file, a directory, not a regular file (a FIFO, a device,
            a socket: nothing is read from it), bigger than ``limit``, or unreadable —
            one line naming the file; ``error(message)`` is raised instead when given
            (e.g. a :class:`~core.errors.BranchError` for an intervention file), with
            the message starting ``"{path}: "``.
    """
    name = os.fsdecode(path)
    fd, st = _open_regular(path, what, error)
    try:
        if limit is not None and st.st_size > limit:
            raise _fail(error, name, _limit_reason(st.st_size, limit, what))
        # one buffer of the file's size (FileIO's own reader: about 1x the file in
        # memory, files over 2 GiB included); a limited read stops one byte past it
        with open(fd, "rb", buffering=0, closefd=False) as fh:
            try:
                data = fh.readall() if limit is None else fh.read(limit + 1)
            except MemoryError:
                raise _fail(
                    error, name, f"is {st.st_size / 1024**3:,.1f} GiB: not enough memory to read the {what}"
                ) from None
            except OSError as exc:
                raise _fail(error, name, f"cannot read {what}: {exc.strerror}") from None
        if limit is not None and len(data) > limit:
            raise _fail(error, name, _limit_reason(len(data), limit, what))
        return data
    finally:
        os.close(fd)


def check_input(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    error: Callable[[str], InspectorError] | None = None,
) -> None:
    """Check that ``path`` is a regular file that can be opened, reading nothing.

    Raises:
        InputFileError (or ``error(message)``): as :func:`read_input`.
    """
    fd, _ = _open_regular(path, what, error)
    os.close(fd)


def read_input_head(path: str | os.PathLike[str], n: int) -> bytes:
    """The first ``n`` bytes of the regular file ``path``; ``b""`` when it is not one
    or cannot be read (format sniffing: the reader proper then gives the error)."""
    try:
        fd, _ = _open_regular(path, "file", None)
    except InspectorError:
        return b""
    try:
        return os.read(fd, n)
    except OSError:
        return b""
    finally:
        os.close(fd)


def read_input_tail(path: str | os.PathLike[str], n: int) -> bytes:
    """The last ``n`` bytes of the regular file ``path``; ``b""`` as
    :func:`read_input_head`."""
    try:
        fd, st = _open_regular(path, "file", None)
    except InspectorError:
        return b""
    try:
        os.lseek(fd, max(0, st.st_size - n), os.SEEK_SET)
        return os.read(fd, n)
    except OSError:
        return b""
    finally:
        os.close(fd)


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file (following symbolic links), without opening it."""
    try:
        return stat.S_ISREG(Path(path).stat().st_mode)
    except OSError:
        return False


def check_mapped_size(data: object, source: str) -> None:
    """Check that the file a memory map ``data`` was made of is no shorter than the map,
    before a part of the map is read: reading a page past the end of a file truncated
    since it was mapped kills the process (SIGBUS), where this raises. The size is the
    mapped file's own (``mmap.size()``, an ``fstat`` of the map's descriptor), not the
    path's: a file replaced at its path leaves the map intact. Nothing for data that is
    not a map.

    The check narrows the window, it cannot close it: a file truncated between the
    check and the read still ends the process.

    Raises:
        FormatError: the file is now shorter than when it was opened (names ``source``).
    """
    import mmap

    if not isinstance(data, mmap.mmap):
        return
    try:
        size = data.size()
    except (OSError, ValueError):  # a closed map: its reader says so
        return
    if size < len(data):
        raise FormatError(
            f"the file changed on disk: it is {size:,} bytes now, {len(data):,} when it was opened "
            "(reopen it to read it as it is now)",
            file=source,
        )


def release_pages(data: object, released: int, offset: int) -> int:
    """Let the kernel drop the pages of a memory map ``data`` from ``released`` up to
    the page of ``offset`` that a pass has read (``MADV_DONTNEED``: clean file pages,
    read again from the page cache if touched), so a pass over a big file keeps the
    process's resident memory bounded. Returns the new mark (``released`` unchanged for
    data that is not a map, or where the call is not available)."""
    import mmap

    if not isinstance(data, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return released
    end = offset - offset % mmap.PAGESIZE
    if end <= released:
        return released
    try:
        data.madvise(mmap.MADV_DONTNEED, released, end - released)
    except (OSError, ValueError):
        return released
    return end
