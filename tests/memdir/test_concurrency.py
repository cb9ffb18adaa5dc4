"""Two processes writing one memdir at once lose nothing: every file, every pointer line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jupyter_memory.memdir.doctor import doctor
from jupyter_memory.memdir.index import parse_index
from jupyter_memory.memdir.store import MemoryStore

PER_PROCESS = 200

WRITER = """
import sys
from jupyter_memory.memdir.store import MemoryStore

memdir, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = MemoryStore(memdir, provenance_default="agent")
print("ready", flush=True)
sys.stdin.readline()  # start together
for i in range(count):
    if i % 4 == 3:  # the agent's raw Write path shares the same lock
        text = f"---\\nname: {tag}-{i}\\ndescription: {tag} wrote memory {i}\\n---\\nbody {i}\\n"
        store.write_file(f"{tag}/note_{i}.md", text, provenance="agent")
    else:
        store.create(f"{tag}-{i}", f"{tag} wrote memory {i}", "project", f"body {i}")
print("done", flush=True)
"""


def test_two_processes_lose_nothing(tmp_path: Path) -> None:
    memdir = tmp_path / "memory"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(memdir), tag, str(PER_PROCESS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for tag in ("alpha", "beta")
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.strip() == "done"

    store = MemoryStore(memdir)
    memories = store.list()
    assert len(memories) == 2 * PER_PROCESS
    entries = parse_index(store.read_index()).entries
    assert len(entries) == 2 * PER_PROCESS
    assert {e.file for e in entries} == {m.file for m in memories}
    assert all(m.indexed for m in memories)
    leftovers = [p.name for p in memdir.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    # 400 pointer lines are past the 200-line load limit: the only thing doctor may report
    assert [f.code for f in doctor(store)] == ["index_over_limit"]
