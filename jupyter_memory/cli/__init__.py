"""The jupyter-memory command line."""
