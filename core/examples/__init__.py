"""Example agents shipped with every install: the deterministic sample agent
(:mod:`.sample_agent`) the bundled recordings were made with."""
