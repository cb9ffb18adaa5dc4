"""``jupyter-memory bundle``: pack a recorded notebook with its memory, or unpack one.

The command line over :mod:`jupyter_memory.sessions.bundle`; ``unpack --replay`` then
executes the notebook against its recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Registered after transcript, whichever module is imported first: the help lists the
# subcommands in the order they were registered.
from jupyter_memory.commands import transcript  # noqa: F401
from jupyter_memory.commands.base import CommandContext, CommonArgs, arg, command
from jupyter_memory.sessions.bundle import BundleError, pack, replay, unpack
from jupyter_memory.sessions.recording import REPLAY_ENV

__all__ = ["BUNDLE_HELP"]

BUNDLE_HELP = "Pack a recorded notebook with its memory into a zip, or unpack and replay one."


@dataclass(frozen=True, kw_only=True)
class BundleArgs(CommonArgs):
    action: str = arg(choices=("pack", "unpack"),
                      help="pack NOTEBOOK [-o ZIP]; unpack ZIP DIR [--replay]")
    source: str = arg(help="the notebook (pack) or the bundle zip (unpack)")
    dest: str | None = arg(nargs="?", help="unpack: the new folder to unpack into")
    output: str | None = arg("-o", "--output",
                             help="pack: the zip to write (default <notebook>.bundle.zip)")
    recording: str | None = arg("--recording",
                                help="pack: the recording (default <notebook>.recording.json)")
    include: list[str] = arg("--include", action="append", default=[], metavar="GLOB",
                             help="pack: also carry these files from the notebook's folder "
                                  "(data files)")
    allow_secrets: bool = arg("--allow-secrets", action="store_true",
                              help="pack even if something looks like a credential")
    replay: bool = arg("--replay", action="store_true",
                       help="unpack: then execute the notebook against its recording (no key "
                            "needed)")
    kernel: str = arg("--kernel", default="python3", help="unpack --replay: the kernel to run")
    timeout: int = arg("--timeout", type=int, default=120,
                       help="unpack --replay: seconds per cell")


@command("bundle", BUNDLE_HELP, BundleArgs)
def _bundle(ctx: CommandContext[BundleArgs]) -> int:
    args = ctx.args
    if args.action == "pack":
        result = pack(Path(args.source), Path(args.output) if args.output else None,
                      recording=Path(args.recording) if args.recording else None,
                      include=args.include, allow_secrets=args.allow_secrets)
        text = (f"Packed {result.notebook} with {result.recording}, "
                f"{len(result.memory_files)} memory files and "
                f"{len(result.instruction_files)} instruction files into {result.path}")
        if result.left_out:
            text += "\nLeft out (outside the project and config folders): " + ", ".join(result.left_out)
        ctx.emit(result.to_json(), text)
        return 0
    if not args.dest:
        raise BundleError("bundle unpack needs a destination: bundle unpack ZIP DIR.")
    unpacked = unpack(Path(args.source), Path(args.dest))
    if not args.replay:
        ctx.emit(unpacked.to_json(), f"Unpacked into {unpacked.folder}; replay it with "
                 f"{REPLAY_ENV}={unpacked.recording} JUPYTER_MEMORY_DIR={unpacked.memdir} "
                 f"CLAUDE_CONFIG_DIR={unpacked.config_dir} JUPYTER_MEMORY_UNTRUSTED=1 "
                 "jupyter nbconvert --execute "
                 f"{unpacked.notebook}, or unpack with --replay.")
        return 0
    report = replay(unpacked, kernel_name=args.kernel, timeout=args.timeout, env=ctx.env)
    ctx.emit({**unpacked.to_json(), "replay": report.to_json()}, report.describe())
    return 0 if report.ok else 1
