"""The writer that the crash-safety test kills: a deterministic stream of memdir writes.

Run as ``python crash_child.py MEMDIR LOG SEED ROUND``. It prints ``READY`` once set up,
then performs the operations of :func:`plan` one after another, printing ``ACK <step>``
after each call has returned (so an acknowledged operation is one the caller was told
had succeeded). The parent kills it with SIGKILL at a random moment and checks the disk
against the same plan. Not a test module: pytest does not collect it.
"""

from __future__ import annotations

import random
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

KINDS = ("create", "update", "write_file", "log")
WEIGHTS = (35, 25, 15, 25)
MAX_STEPS = 4096


@dataclass(frozen=True)
class Op:
    """One planned write; every field is a pure function of (seed, round, step)."""

    step: int
    kind: str
    file: str = ""
    name: str = ""
    description: str = ""
    type: str = ""
    body: str = ""
    origin: str = ""
    uuid: str = ""
    role: str = ""
    text: str = ""


def _body(round_id: int, step: int, large: bool) -> str:
    head = f"Crash test body, round {round_id}, step {step}.\n数据口径以分为单位 — ünïcödé {step}\n"
    filler = "".join(f"line {n}: the quick brown fox, step {step}\n" for n in range(800 if large else 3))
    return head + filler


def plan(seed: int, round_id: int, count: int) -> list[Op]:
    """The first ``count`` operations of a round (a prefix-stable sequence)."""
    rng = random.Random(f"{seed}:{round_id}")
    ops: list[Op] = []
    created: list[Op] = []  # files made by `create` in this round, targets of `update`
    for step in range(count):
        kind = rng.choices(KINDS, WEIGHTS)[0]
        large = rng.random() < 0.12
        pick = rng.random()
        if kind == "update" and not created:
            kind = "create"
        if kind == "create":
            op = Op(
                step, kind, file=f"project_r{round_id}_s{step}.md", name=f"r{round_id}-s{step}",
                description=f"crash round {round_id} step {step}", type="project",
                body=_body(round_id, step, large), origin="user",
            )
            created.append(op)
        elif kind == "update":
            target = created[int(pick * len(created))]
            op = Op(
                step, kind, file=target.file, name=target.name,
                description=f"crash round {round_id} file {target.step} updated at {step}",
                type=target.type, body=_body(round_id, step, large), origin="user",
            )
        elif kind == "write_file":
            op = Op(
                step, kind, file=f"feedback_r{round_id}_s{step}.md", name=f"fb-r{round_id}-s{step}",
                description=f"agent note of crash round {round_id} step {step}", type="feedback",
                body=_body(round_id, step, large), origin="agent",
            )
        else:
            size = 1_500_000 if large else 40
            op = Op(
                step, kind, uuid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                role="user" if step % 2 else "assistant",
                text=f"message r{round_id} s{step} " + "日志" * (size // 2),
            )
        ops.append(op)
    return ops


def agent_text(op: Op) -> str:
    """The whole file the agent's Write sends for a ``write_file`` operation."""
    return (
        f"---\nname: {op.name}\ndescription: {op.description}\ntype: {op.type}\n---\n{op.body}"
    )


def main(argv: list[str]) -> None:
    from jupyter_memory.memdir.guard import warm_up
    from jupyter_memory.memdir.store import MemoryStore
    from jupyter_memory.transcript.writer import TranscriptWriter

    memdir, log, seed, round_id = Path(argv[0]), Path(argv[1]), int(argv[2]), int(argv[3])
    store = MemoryStore(memdir, maintain_index=True, lock_timeout=20.0)
    writer = TranscriptWriter(
        log, session_id=f"crash-{seed}-{round_id}", cwd=str(memdir), version="0.0.0",
        git_branch=None, fsync=True,
    )
    warm_up()  # load the credential guard's detectors before the parent starts its clock
    print("READY", flush=True)
    count = 0
    while count < MAX_STEPS:  # the parent kills long before; never run away if it cannot
        count += 64
        for op in plan(seed, round_id, count)[count - 64 :]:
            if op.kind == "create":
                store.create(op.name, op.description, op.type, op.body, file=op.file)
            elif op.kind == "update":
                store.update(op.file, description=op.description, body=op.body)
            elif op.kind == "write_file":
                store.write_file(op.file, agent_text(op), provenance="agent")
            else:
                content = [{"type": "text", "text": op.text}]
                writer.append_message(op.role, {"role": op.role, "content": content}, uuid=op.uuid)
            print(f"ACK {op.step}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
