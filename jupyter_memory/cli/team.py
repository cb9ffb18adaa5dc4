"""``jupyter-memory team``: share the team folder through git (SPEC §8).

A front end over :mod:`jupyter_memory.memdir.team`: ``team path`` shows where the team folder
is and which rule chose it, ``team clone URL`` makes it a clone of the team's shared
repository, ``team status`` shows what is not synced yet (no network), and ``team
sync`` commits, pulls with rebase, rebuilds the team index and pushes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register_team_command(command: Callable[..., Any], arg: Callable[..., Any]) -> None:
    """Add the ``team`` subcommand to the ``jupyter-memory`` parser."""

    @command(
        "team",
        "Share team memory through git: path, clone URL, status, sync.",
        arg("action", choices=("path", "clone", "status", "sync"),
            help="path: where the team folder is; clone URL: share it through that git "
                 "repository; status: what is not synced yet; sync: commit, pull, push"),
        arg("url", nargs="?", help="for clone: the address of the team's shared repository"),
    )
    def _team(ctx: Any) -> int:
        from jupyter_memory.memdir.location import locate
        from jupyter_memory.memdir.team import clone, status, sync, team_location

        team = team_location(locate(ctx.project, ctx.env), ctx.env)
        action = ctx.args.action
        if action != "clone" and ctx.args.url:
            ctx.err(f"`team {action}` takes no URL; only `team clone URL` does.")
            return EXIT_USAGE
        if action == "path":
            ctx.emit(team.to_json(), str(team.folder))
            if not ctx.json:
                ctx.err(f"chosen by: {team.reason}")
            return EXIT_OK
        if action == "clone":
            if not ctx.args.url:
                ctx.err("Give the address of the team's repository: jupyter-memory team clone URL")
                return EXIT_USAGE
            text = clone(ctx.args.url, team.folder, ctx.env)
            ctx.emit({"folder": str(team.folder), "url": ctx.args.url}, text)
            return EXIT_OK
        if action == "status":
            state = status(team.folder, ctx.env)
            ctx.emit(state.to_json(), state.text())
            return EXIT_OK
        report = sync(team.folder, ctx.env)
        ctx.emit(report.to_json(), report.text())
        return EXIT_OK if report.ok else EXIT_FAILED
