"""Storage: where memory lives and the one write path (docs/reference.md#the-memdir)."""
