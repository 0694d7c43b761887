"""Yield points: the loops that serialize, hash and redact a big recording call the
pacer the current thread installed, every few records, and only that thread's."""

from __future__ import annotations

import threading

from core.record import io, pacing
from core.record.io import dumps_recording, redact_recording
from tests.builders import chat_recording


def test_saving_a_big_recording_calls_this_threads_pacer_every_few_records() -> None:
    rec = chat_recording(150)  # 301 call records and more
    n = len(rec.records)
    calls = 0

    def pacer() -> None:
        nonlocal calls
        calls += 1

    with pacing.paced(pacer):
        redact_recording(rec)
        after_redaction = calls
        data = dumps_recording(rec)
    assert after_redaction >= n // pacing.EVERY
    # the records (to JSON) and their digest every EVERY records, the document per part
    want = 2 * (n // pacing.EVERY) + n // io.ARRAY_PART
    assert calls - after_redaction >= want
    done = calls
    assert data == dumps_recording(rec)  # the same bytes without a pacer
    assert calls == done  # and no pacer after the block


def test_a_pacer_is_the_installing_threads_only() -> None:
    seen: list[str] = []
    with pacing.paced(lambda: seen.append(threading.current_thread().name)):
        pacing.pace()
        other = threading.Thread(target=pacing.pace, name="other")
        other.start()
        other.join()
        with pacing.paced(lambda: seen.append("inner")):
            pacing.pace()
        pacing.pace()  # the outer pacer is back
    pacing.pace()  # none installed: nothing happens
    assert seen == ["MainThread", "inner", "MainThread"]
