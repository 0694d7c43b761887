"""Reading recordings: the timeline index (:mod:`.timeline`) and its text forms
(:mod:`.timeline_text`), trace alignment (:mod:`.align`), the trace diff (:mod:`.diff`),
payload diffs (:mod:`.payload_diff`), run metrics (:mod:`.metrics`) and the audit
(:mod:`.audit`).

SPEC "Application" (timeline) and "Diffs, metrics, effects, audit".
"""
