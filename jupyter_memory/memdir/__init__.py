"""Storage: where memory lives and the one write path (SPEC §2)."""
