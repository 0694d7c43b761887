"""Which calls and interventions explain an outcome: base/replay comparisons
(:mod:`.causal`), effect ranking (:mod:`.ranking`), sweeps over candidates
(:mod:`.sweep`) and knockout candidates (:mod:`.knockout`).

SPEC "Diffs, metrics, effects, audit": effects.
"""
