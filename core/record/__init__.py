"""Recordings as data: the model (:mod:`.recording`), reading and writing
(:mod:`.io`), format migration (:mod:`.migrate`), canonical keys (:mod:`.canonical`),
exact JSON values (:mod:`.jsonvalues`), the nesting limit (:mod:`.nesting`),
user-written JSON (:mod:`.userjson`), secret redaction (:mod:`.redaction`) and the JSON
Schema (:mod:`.schema`).

SPEC "Recording format"; the lowest layer of ``core``: it imports nothing else of it
except :mod:`core.errors`.
"""
