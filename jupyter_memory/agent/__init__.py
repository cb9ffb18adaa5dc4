"""The agent: the loop, the session, tools, extraction, compaction, lifecycle."""
