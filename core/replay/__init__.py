"""Replay: the replay session and its harness (:mod:`.session`), the agent boundary
(:mod:`.boundary`), branches and interventions (:mod:`.branch`), fixtures and
requirements (:mod:`.fixtures`), the replay engine (:mod:`.engine`), the dry run
(:mod:`.dry_run`), the replay record (:mod:`.replay_record`) and replays run in a
workspace (:mod:`.replays`).

SPEC "Replay session" and "Replay engine".
"""
