"""Hardening: crash safety, the bad-input corpus, path escapes, injection, fuzzing."""
