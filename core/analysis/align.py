"""Sequence alignment shared by the trace diff and the payload diff.

:func:`align` returns the matched index pairs of a longest common subsequence of two
sequences of hashable keys, computed with Myers' O((N+M)·D) greedy algorithm
(E. W. Myers, "An O(ND) Difference Algorithm and Its Variations", Algorithmica 1986)
after trimming the common prefix and suffix and dropping the keys that occur on one side
only (they can never match, so the LCS is unchanged; this is what keeps a run that
departs from its base for good cheap to align). When the edit distance of the middle part
exceeds ``max_edits`` the exact search stops and the middle is split on *patience
anchors* — keys that occur exactly once on each side, kept in increasing order on both
sides (the longest increasing subsequence, as in Bram Cohen's patience diff and git's
``--patience``) — and each gap is aligned again the same way; a gap with no anchor and
too many edits is left unmatched (reported as removed + inserted). So the result is a
minimal edit script whenever D ≤ ``max_edits`` (the common case: runs that share most
calls), and a good, bounded-cost one otherwise.

:func:`opcodes` turns the matches into difflib-style blocks.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Sequence

__all__ = ["DEFAULT_MAX_EDITS", "align", "opcodes"]

DEFAULT_MAX_EDITS = 2000


def align(a: Sequence[Hashable], b: Sequence[Hashable], *, max_edits: int = DEFAULT_MAX_EDITS) -> list[tuple[int, int]]:
    """Matched pairs ``(i, j)`` (``a[i] == b[j]``), strictly increasing in both indexes.

    The pairs form a longest common subsequence when the edit distance of the trimmed
    middle is at most ``max_edits`` (see the module docstring for the fallback).
    Among equally long alignments Myers' algorithm prefers deletions before insertions.
    Cost: O(N + M + D²) time and memory for D ≤ ``max_edits``.
    """
    if max_edits < 0:
        raise ValueError("max_edits must be >= 0")
    # Intern keys to small ints so the inner loop compares ints.
    ids: dict[Hashable, int] = {}
    ia = [ids.setdefault(x, len(ids)) for x in a]
    ib = [ids.setdefault(x, len(ids)) for x in b]
    out: list[tuple[int, int]] = []
    _align_range(ia, 0, len(ia), ib, 0, len(ib), max_edits, out)
    return out


def _align_range(
    a: list[int],
    a0: int,
    a1: int,
    b: list[int],
    b0: int,
    b1: int,
    max_edits: int,
    out: list[tuple[int, int]],
) -> None:
    # common prefix
    while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
        out.append((a0, b0))
        a0 += 1
        b0 += 1
    # common suffix (appended after the middle)
    s = 0
    while a1 - s > a0 and b1 - s > b0 and a[a1 - 1 - s] == b[b1 - 1 - s]:
        s += 1
    m_a1, m_b1 = a1 - s, b1 - s
    if a0 < m_a1 and b0 < m_b1:
        # keys present on one side only can never match: drop them first (an exact
        # reduction — the LCS is unchanged — that keeps D small when a run departs)
        in_b = set(b[b0:m_b1])
        in_a = set(a[a0:m_a1])
        ia = [i for i in range(a0, m_a1) if a[i] in in_b]
        ib = [j for j in range(b0, m_b1) if b[j] in in_a]
        if ia and ib:
            if len(ia) == m_a1 - a0 and len(ib) == m_b1 - b0:
                _align_middle(a, a0, m_a1, b, b0, m_b1, max_edits, out)
            else:
                tmp: list[tuple[int, int]] = []
                ra, rb = [a[i] for i in ia], [b[j] for j in ib]
                _align_range(ra, 0, len(ra), rb, 0, len(rb), max_edits, tmp)
                out.extend((ia[x], ib[y]) for x, y in tmp)
    for t in range(s):
        out.append((m_a1 + t, m_b1 + t))


def _align_middle(
    a: list[int],
    a0: int,
    a1: int,
    b: list[int],
    b0: int,
    b1: int,
    max_edits: int,
    out: list[tuple[int, int]],
) -> None:
    mid = _myers(a, a0, a1, b, b0, b1, max_edits)
    if mid is not None:
        out.extend(mid)
    else:
        _patience(a, a0, a1, b, b0, b1, max_edits, out)


def _myers(
    a: list[int], a0: int, a1: int, b: list[int], b0: int, b1: int, max_edits: int
) -> list[tuple[int, int]] | None:
    """Greedy forward Myers on ``a[a0:a1]`` vs ``b[b0:b1]``; ``None`` if D > max_edits."""
    n = a1 - a0
    m = b1 - b0
    max_d = min(n + m, max_edits)
    off = max_d + 1
    v = [0] * (2 * max_d + 3)
    trace: list[list[int]] = []  # trace[d] = v[-d..d] after step d
    for d in range(max_d + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            while x < n and y < m and a[a0 + x] == b[b0 + y]:
                x += 1
                y += 1
            v[off + k] = x
            if x >= n and y >= m:
                trace.append(v[off - d : off + d + 1])
                return _backtrack(trace, n, m, a0, b0)
        trace.append(v[off - d : off + d + 1])
    return None


def _backtrack(trace: list[list[int]], n: int, m: int, a0: int, b0: int) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        prev = trace[d - 1]  # indexes -(d-1)..(d-1) → prev[k + d - 1]
        k = x - y
        if k == -d or (k != d and prev[k - 1 + d - 1] < prev[k + 1 + d - 1]):
            pk = k + 1
            px = prev[pk + d - 1]
            sx = px
        else:
            pk = k - 1
            px = prev[pk + d - 1]
            sx = px + 1
        sy = sx - k
        while x > sx:
            x -= 1
            y -= 1
            pairs.append((a0 + x, b0 + y))
        x, y = px, px - pk
        del sy
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        pairs.append((a0 + x, b0 + y))
    pairs.reverse()
    return pairs


def _patience(
    a: list[int],
    a0: int,
    a1: int,
    b: list[int],
    b0: int,
    b1: int,
    max_edits: int,
    out: list[tuple[int, int]],
) -> None:
    """Split on keys unique on both sides (LIS of their positions), align each gap."""
    count_a: dict[int, int] = {}
    for i in range(a0, a1):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    count_b: dict[int, int] = {}
    pos_b: dict[int, int] = {}
    for j in range(b0, b1):
        count_b[b[j]] = count_b.get(b[j], 0) + 1
        pos_b[b[j]] = j
    cand = [(i, pos_b[a[i]]) for i in range(a0, a1) if count_a[a[i]] == 1 and count_b.get(a[i]) == 1]
    anchors = _lis(cand)
    if not anchors:
        return  # nothing provably matchable: the gap stays unmatched
    pi, pj = a0, b0
    for i, j in anchors:
        _align_range(a, pi, i, b, pj, j, max_edits, out)
        out.append((i, j))
        pi, pj = i + 1, j + 1
    _align_range(a, pi, a1, b, pj, b1, max_edits, out)


def _lis(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest subsequence of ``pairs`` (sorted by first item) increasing in the second."""
    tails: list[int] = []  # tails[L] = smallest end j of an increasing run of length L+1
    tail_idx: list[int] = []
    prev: list[int] = [-1] * len(pairs)
    for idx, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_idx.append(idx)
        else:
            tails[pos] = j
            tail_idx[pos] = idx
        prev[idx] = tail_idx[pos - 1] if pos > 0 else -1
    res: list[tuple[int, int]] = []
    idx = tail_idx[-1] if tail_idx else -1
    while idx >= 0:
        res.append(pairs[idx])
        idx = prev[idx]
    res.reverse()
    return res


def opcodes(matches: Sequence[tuple[int, int]], n: int, m: int) -> list[tuple[str, int, int, int, int]]:
    """difflib-style blocks ``(tag, i1, i2, j1, j2)`` covering ``a[0:n]`` and ``b[0:m]``.

    ``tag`` is ``equal`` (a run of matches), ``delete``, ``insert`` or ``replace`` (a gap
    with items on both sides).
    """
    out: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    k = 0
    nm = len(matches)
    while k < nm:
        mi, mj = matches[k]
        if mi > i or mj > j:
            tag = "replace" if (mi > i and mj > j) else ("delete" if mi > i else "insert")
            out.append((tag, i, mi, j, mj))
        run = 1
        while k + run < nm and matches[k + run] == (mi + run, mj + run):
            run += 1
        out.append(("equal", mi, mi + run, mj, mj + run))
        i, j = mi + run, mj + run
        k += run
    if i < n or j < m:
        tag = "replace" if (i < n and j < m) else ("delete" if i < n else "insert")
        out.append((tag, i, n, j, m))
    return out
