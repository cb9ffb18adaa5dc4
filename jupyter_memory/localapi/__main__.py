"""``python -m jupyter_memory.localapi``: serve a script of turns by hand (see ``cli``)."""

from jupyter_memory.localapi.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
