"""Outcome predicates used by the metrics tests (referenced as ``module:function``)."""

from core.record.recording import Recording


def refund_issued(rec: Recording):
    """Success when the final output issued a refund; unknown without a final output."""
    out = rec.metadata.get("final_output")
    if out is None:
        return None
    return bool(out.get("refund"))


def broken(rec: Recording):
    raise RuntimeError("predicate bug")


not_callable = 42
