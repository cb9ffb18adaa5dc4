"""The JSONL session log (SPEC §7): writing, reading, rebuilding, retention."""
