"""``jupyter-memory bundle``: pack a recorded notebook with its memory, or unpack one.

The command line over :mod:`jupyter_memory.sessions.bundle`. ``pack`` and ``unpack`` list
what the bundle holds before writing it; ``unpack --replay`` (or ``replay`` of a folder
unpacked earlier) then lists the notebook's code cells, asks, and executes the notebook
against its recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Registered after transcript, whichever module is imported first: the help lists the
# subcommands in the order they were registered.
from jupyter_memory.commands import transcript  # noqa: F401
from jupyter_memory.commands.base import (
    CommandContext,
    CommandUsageError,
    CommonArgs,
    arg,
    command,
    printable,
)
from jupyter_memory.sessions.bundle import (
    BundleError,
    UnpackResult,
    pack,
    plan_replay,
    replay,
    unpack,
)
from jupyter_memory.sessions.bundle_contents import Contents

__all__ = ["BUNDLE_HELP"]

BUNDLE_HELP = "Pack a recorded notebook with its memory into a zip, or unpack and replay one."


@dataclass(frozen=True, kw_only=True)
class BundleArgs(CommonArgs):
    action: str = arg(choices=("pack", "unpack", "replay"),
                      help="pack NOTEBOOK [-o ZIP]; unpack ZIP DIR [--replay]; replay DIR")
    source: str = arg(help="the notebook (pack), the bundle zip (unpack) or the unpacked "
                           "folder (replay)")
    dest: str | None = arg(nargs="?", help="unpack: the new folder to unpack into")
    output: str | None = arg("-o", "--output",
                             help="pack: the zip to write (default <notebook>.bundle.zip)")
    recording: str | None = arg("--recording",
                                help="pack: the recording (default <notebook>.recording.json)")
    include: list[str] = arg("--include", action="append", default=[], metavar="GLOB",
                             help="pack: also carry these files from the notebook's folder "
                                  "(data files)")
    include_private: bool = arg("--include-private", action="store_true",
                                help="pack: also carry your private memories and your own "
                                     "instruction files (user scope, CLAUDE.local.md)")
    allow_secrets: bool = arg("--allow-secrets", action="store_true",
                              help="pack even if the notebook, recording, instructions or data "
                                   "look like they hold a credential (a memory that does is "
                                   "never packed)")
    replay: bool = arg("--replay", action="store_true",
                       help="unpack: then execute the notebook against its recording (no key "
                            "needed; lists the code cells and asks first)")
    yes: bool = arg("--yes", action="store_true",
                    help="replay: run the notebook's cells without asking (needed where "
                         "nobody can answer)")
    kernel: str = arg("--kernel", default="python3", help="replay: the kernel to run")
    timeout: int = arg("--timeout", type=int, default=120, help="replay: seconds per cell")


@command("bundle", BUNDLE_HELP, BundleArgs)
def _bundle(ctx: CommandContext[BundleArgs]) -> int:
    args = ctx.args

    def show(contents: Contents) -> None:
        ctx.note(contents.describe("The bundle"))

    if args.action == "pack":
        result = pack(Path(args.source), Path(args.output) if args.output else None,
                      recording=Path(args.recording) if args.recording else None,
                      include=args.include, include_private=args.include_private,
                      allow_secrets=args.allow_secrets, show=show)
        files = len(result.contents.included)
        ctx.emit(result.to_json(), f"Packed {files} file{'s' if files != 1 else ''} "
                                   f"({result.contents.total_bytes:,} bytes) into {result.path}.")
        return 0
    if args.action == "replay":
        if args.dest:
            raise CommandUsageError("bundle replay takes the unpacked folder only: "
                                    "bundle replay DIR.")
        return _replay(ctx, Path(args.source))
    if not args.dest:
        raise BundleError("bundle unpack needs a destination: bundle unpack ZIP DIR.")
    unpacked = unpack(Path(args.source), Path(args.dest), show=show)
    if not args.replay:
        ctx.emit(unpacked.to_json(), f"Unpacked into {unpacked.folder}. Read "
                 f"{unpacked.notebook.name} there, then replay it with `jupyter-memory bundle "
                 f"replay {unpacked.folder}` (it lists the code cells and asks first).")
        return 0
    return _replay(ctx, unpacked)


def _replay(ctx: CommandContext[BundleArgs], target: UnpackResult | Path) -> int:
    args = ctx.args
    if args.yes:  # nobody is asked, so the listing goes to the log
        ctx.note(plan_replay(target).describe())
    report = replay(target, kernel_name=args.kernel, timeout=args.timeout, env=ctx.env,
                    yes=args.yes, ask=lambda question: ctx.confirm(printable(question)))
    where = target.to_json() if isinstance(target, UnpackResult) else {"folder": str(target)}
    ctx.emit({**where, "replay": report.to_json()}, report.describe())
    return 0 if report.ok else 1
