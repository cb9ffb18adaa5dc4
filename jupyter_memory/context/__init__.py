"""What a request holds: instruction files, assembly, prompts, models, tokens."""
