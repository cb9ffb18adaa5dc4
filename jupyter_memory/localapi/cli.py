"""Serve a script by hand: ``python -m jupyter_memory.localapi --script turns.json``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from jupyter_memory.localapi.echo import echo_responder
from jupyter_memory.localapi.script import Turn, load_script
from jupyter_memory.localapi.server import FakeAnthropic

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script until interrupted; the exit status is 2 when it cannot start."""
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_memory.localapi",
        description="A local Anthropic Messages API that answers from a script of turns.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--script", help="JSON file with a list of turns (docs/fake-api.md)")
    parser.add_argument(
        "--echo", action="store_true",
        help="when the script runs out, echo the person's last words; a forced tool call "
        "gets the emptiest input its schema accepts",
    )
    parser.add_argument(
        "--min-cache-tokens", type=int, default=None, metavar="N",
        help="shortest cacheable prefix for every model (default: each model's own minimum, "
        "as the API bills; 0 caches any prefix)",
    )
    parser.add_argument(
        "--connection-delay", type=float, default=0.0, metavar="SECONDS",
        help="wait this long on each new connection, as a distant TLS handshake would",
    )
    args = parser.parse_args(argv)

    turns: list[Turn] = []
    if args.script:
        try:
            with open(args.script, encoding="utf-8") as handle:
                turns = load_script(handle.read())
        except (OSError, ValueError) as err:
            print(f"fake_api: cannot load script {args.script}: {err}", file=sys.stderr)
            return 2
    server = FakeAnthropic(
        args.host,
        args.port,
        min_cache_tokens=args.min_cache_tokens,
        responder=echo_responder if args.echo else None,
        connection_delay=max(args.connection_delay, 0.0),
    )
    server.script(turns)
    try:
        server.start()
    except OSError as err:
        print(f"fake_api: cannot listen on {args.host}:{args.port}: {err}", file=sys.stderr)
        return 2
    print(f"fake_api listening on {server.base_url} with {len(turns)} scripted turn(s)", flush=True)
    print(f"  export ANTHROPIC_BASE_URL={server.base_url} ANTHROPIC_API_KEY=test-key", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
