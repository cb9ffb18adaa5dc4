"""Every example notebook replays offline and shows exactly the committed outputs.

Each ``examples/NN-*.ipynb`` is copied with its recordings into a fresh folder and executed
headless with nbclient, the way ``python -m jupyter_memory.demo`` runs the tour: no model
variable at all, so every answer must come from the recording. A cell that fails (a
request the recording does not hold, an exception) fails the test with the cell's error; a
finished run must give the committed notebook's outputs, compared after removing what
legitimately differs from run to run: the work folder's path (and the digests of request
bodies that contain it), wall-clock timestamps, widget model ids, execution metadata, the
random ids of pending memories, and whether a prefetch that a tool-less answer did not wait
for had finished when the turn record was written (a race by design). Regenerate the
committed notebooks and recordings with ``examples/make_recordings.py`` after a deliberate
change.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_memory.context.request_parts import record_parts
from jupyter_memory.demo import (
    execute_notebook,
    folder_files,
    kernel_env,
    prepare_work,
    scratch_folder,
    static_outputs,
    write_html,
    written_outside_run,
)
from jupyter_memory.demo import main as demo_main

pytestmark = pytest.mark.kernel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("[0-9][0-9]*-*.ipynb"))

#: Wall-clock times: a replay keeps the recorded times of model calls, but file times,
#: export names and the like are taken when the notebook runs.
_DATETIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?")
_MTIME_NS = re.compile(r'("mtime_ns": )\d+')
#: The log of a replayed session is named after the moment the replay started.
_REPLAY_LOG = re.compile(r"replay-\d{8}T\d+Z")
#: A turn record's digest of each request body it sent: a hash of text that holds the work
#: folder's path (the bodies themselves are compared with the path replaced), whole or as
#: ``%request`` heads a call with it (its first 12 hex digits and an ellipsis).
_DIGEST = re.compile(r"sha256:[0-9a-f]{12}(?:[0-9a-f]{52}|…)")


def _work_folder(nb: Any) -> str | None:
    """The folder a committed notebook ran in (``make_recordings.py`` notes it)."""
    return (nb.metadata.get("jupyter_memory") or {}).get("executed_in")


TURN_MIME = "application/vnd.jupyter-memory.turn+json"
NOTICE_MIME = "application/vnd.jupyter-memory.notice+json"
#: The two ways a turn record can describe memories prefetch picked for a turn that ended
#: without a tool round: the prefetch never holds up the answer (docs/recall.md, Timing), so
#: whether the small model had answered when the record was written is a race by design.
_PREFETCH_RACE = ("selected and ready, but not attached",
                  "the selector had not answered yet when this was recorded")


def _stored(record: dict[str, Any], value: Any) -> Any:
    """``value``, or the part it refers to when a record (from version 3) keeps it once in
    its parts and refers to it as ``{"$part": digest}``."""
    if isinstance(value, dict) and set(value) == {"$part"}:
        return record_parts(record).get(value["$part"])
    return value


def _settle_prefetch_race(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the racy part of a missed prefetch made the same in both outcomes.

    When the small model had not answered yet, every memory it was shown reads "had not
    answered"; when it had, the picked ones read "selected and ready, but not attached" and
    the others "not selected". Both become one placeholder.
    """
    recall = record.get("recall") or {}
    decisions = _stored(record, recall.get("decisions")) or []
    if not any(str(d.get("reason", "")).startswith(_PREFETCH_RACE) for d in decisions):
        return record
    record = json.loads(json.dumps(record))
    recall = record["recall"]
    recall["decisions"] = json.loads(json.dumps(decisions))  # settled in place, not by digest
    for d in recall["decisions"]:
        if d.get("path") == "B" and d.get("decision") in ("skipped", "not_selected"):
            d["decision"] = "{{PREFETCH RACE}}"
            d["reason"] = "{{PREFETCH NOT ATTACHED}}"
            d.pop("sent_bytes", None)
            d.pop("truncated", None)
    for key in ("status", "reason", "offline_mode", "selected", "unknown", "attached", "answer"):
        (recall.get("selector") or {}).pop(key, None)  # all filled in when the selector answers
    return record


def _pending_ids(nb: Any) -> list[str]:
    """Ids of pending memories (approval mode), in the order the notebook shows them.

    They are random per run, so each is replaced by its position, taken from the
    extraction notices that announce them.
    """
    ids: list[str] = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            notice = (output.get("data") or {}).get(NOTICE_MIME) or {}
            ids += [i for i in notice.get("pending") or [] if i not in ids]
    return ids


def comparable(nb: Any, folder: str | Path | None) -> list[list[str]]:
    """Each code cell's outputs as normalised JSON text, one string per output."""
    nb = static_outputs(nb)
    pending = _pending_ids(nb)
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for output in _coalesce_streams(cell.get("outputs", [])):
            item = dict(output)
            item.pop("execution_count", None)
            if TURN_MIME in (item.get("data") or {}):
                item["data"] = dict(item["data"])
                record = _settle_prefetch_race(item["data"][TURN_MIME])
                for key in ("parts", "json_parts"):
                    if isinstance(record.get(key), dict):
                        # Parts are keyed by digests of text that holds the work folder, so
                        # their order differs between folders: compare them as a sorted list.
                        record = {**record, key: sorted(
                            _normalise(json.dumps(v, sort_keys=True, ensure_ascii=False),
                                       folder, pending) for v in record[key].values())}
                # The cost ledger so far (context/pricing.py) includes background calls
                # (the selector, extraction) whose finishing before the record is written
                # is a race live; tests/context/test_pricing.py checks it exactly instead.
                item["data"][TURN_MIME] = {k: v for k, v in record.items() if k != "cost"}
            text = json.dumps(item, sort_keys=True, ensure_ascii=False, indent=1)
            outputs.append(_normalise(text, folder, pending))
        cells.append(outputs)
    return cells


def _normalise(text: str, folder: str | Path | None, pending: list[str]) -> str:
    """``text`` with the work folder, times, digests and pending ids replaced."""
    if folder:
        for form in {str(folder), str(Path(folder).resolve())}:
            text = text.replace(form, "{{WORK}}")
            # the same folder as a key of <config>/projects/ (session logs, notes)
            text = text.replace(re.sub(r"[^A-Za-z0-9]", "-", form), "{{WORK KEY}}")
        # The scratch folder around it, also as the page names it (Agent.display_roots:
        # <tmp>/jupyter-memory-XXXXXXXX, HTML-escaped in text/html, "_" escaped in
        # markdown), and where a long path was cut before its end.
        scratch = Path(folder).parent.name
        for form in (f"<tmp>/{scratch}", f"&lt;tmp&gt;/{scratch}", f"<tmp>/{scratch}".replace(
                "_", "\\_"), f"&lt;tmp&gt;/{scratch}".replace("_", "\\_")):
            text = text.replace(form, "{{SCRATCH}}")
    text = _DATETIME.sub("{{DATETIME}}", text)
    text = _MTIME_NS.sub(r"\1{{NS}}", text)
    text = _REPLAY_LOG.sub("replay-{{TIME}}", text)
    text = _DIGEST.sub("{{DIGEST}}", text)
    for number, pending_id in enumerate(pending, 1):
        text = text.replace(pending_id, f"{{{{PENDING {number}}}}}")
    return text


def _coalesce_streams(outputs: list[Any]) -> list[dict[str, Any]]:
    """Join runs of stdout (or stderr) outputs: how the kernel splits printed text across
    messages depends on timing, not on what was printed."""
    joined: list[dict[str, Any]] = []
    for output in outputs:
        item = dict(output)
        previous = joined[-1] if joined else None
        if (item.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream"
                and previous.get("name") == item.get("name")):
            previous["text"] = previous.get("text", "") + item.get("text", "")
            continue
        joined.append(item)
    return joined


def drift(committed: list[list[str]], replayed: list[list[str]]) -> str:
    """A readable account of the first cells whose outputs differ, or ''."""
    report = []
    if len(committed) != len(replayed):
        report.append(f"{len(committed)} code cells committed, {len(replayed)} replayed")
    for index, (old, new) in enumerate(zip(committed, replayed, strict=False)):
        if old != new:
            diff = difflib.unified_diff("\n".join(old).splitlines(), "\n".join(new).splitlines(),
                                        "committed", "replayed", lineterm="", n=2)
            report.append(f"code cell {index}:\n" + "\n".join(list(diff)[:60]))
        if len(report) >= 3:
            break
    return "\n\n".join(report)


def test_every_example_is_found() -> None:
    # A notebook split in parts keeps its number with a letter (06a, 06b): the numbers
    # run on without a gap, and the parts of one number are lettered from a.
    numbers = sorted({int(nb.name[:2]) for nb in NOTEBOOKS})
    assert numbers == list(range(1, len(numbers) + 1)), "the course numbers skip"
    for number in numbers:
        parts = [nb.name[2:].split("-", 1)[0] for nb in NOTEBOOKS if int(nb.name[:2]) == number]
        assert parts in ([""], [chr(ord("a") + i) for i in range(len(parts))]), \
            f"notebook {number:02d} has parts {parts}: use one notebook, or a, b, ..."
    assert len(numbers) >= 13
    course = (EXAMPLES.parent / "docs" / "course.md").read_text(encoding="utf-8")
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS:
        assert list(EXAMPLES.glob(f"{notebook.stem}*.recording.json")) or \
            (EXAMPLES / notebook.stem).is_dir(), f"{notebook.name} has no recording"
        assert (EXAMPLES / "html" / f"{notebook.stem}.html").is_file(), \
            f"{notebook.name} has no HTML copy in examples/html/"
        assert notebook.name in course, f"docs/course.md does not place {notebook.name}"
        assert notebook.name in readme, f"examples/README.md does not list {notebook.name}"


def declares_an_extra(notebook: Path) -> bool:
    """Whether the notebook says in its first cell that it needs an optional extra (issue
    29: the others read the same with or without one)."""
    first = nbformat.read(str(notebook), as_version=4).cells[0].source
    return "needs the semantic extra" in first or "needs the `semantic` extra" in first


def ranks_offline(notebook: Path) -> bool:
    """Whether a cell runs the offline ranking, the one part the semantic extra changes
    (recall/offline.py): the offline selector, ``select_offline`` or ``grade_recall``."""
    cells = nbformat.read(str(notebook), as_version=4).cells
    return any(name in cell.source for cell in cells if cell.cell_type == "code"
               for name in ("recall_selector", "select_offline", "grade_recall"))


#: Replayed a second time with the semantic part of the recall selector switched off, as
#: on a machine without the extra (recall/semantic.py: JUPYTER_MEMORY_SEMANTIC=0): the
#: notebooks whose outputs it could change, unless they say they need the extra.
WITHOUT_EXTRAS = [nb for nb in NOTEBOOKS if ranks_offline(nb) and not declares_an_extra(nb)]


def test_every_notebook_without_a_declared_extra_is_replayed_without_it() -> None:
    assert {nb.stem[:2] for nb in WITHOUT_EXTRAS} >= {"11", "14"}
    off = {nb for nb in NOTEBOOKS if without_the_extra(nb) is not None} | set(WITHOUT_EXTRAS)
    assert off == {nb for nb in NOTEBOOKS if not declares_an_extra(nb)}
    assert len(off) >= 13


def without_the_extra(notebook: Path) -> dict[str, str] | None:
    """The environment a notebook's main replay runs in: the semantic part off for a notebook
    that neither needs the extra nor runs the offline ranking (so every notebook that declares
    no extra replays without it), on for the others (those that rank replay a second time
    with it off, below)."""
    if declares_an_extra(notebook) or ranks_offline(notebook):
        return None
    return {"JUPYTER_MEMORY_SEMANTIC": "0"}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_example_replays_without_drift(notebook: Path) -> None:
    _replays_without_drift(notebook, without_the_extra(notebook))


@pytest.mark.parametrize("notebook", WITHOUT_EXTRAS, ids=[nb.stem for nb in WITHOUT_EXTRAS])
def test_example_replays_the_same_without_the_semantic_extra(notebook: Path) -> None:
    _replays_without_drift(notebook, {"JUPYTER_MEMORY_SEMANTIC": "0"})


def _replays_without_drift(notebook: Path, extra: dict[str, str] | None = None) -> None:
    committed = nbformat.read(str(notebook), as_version=4)
    scratch = scratch_folder()  # same path length as the committed run's folder
    work = scratch / notebook.stem
    try:
        copy = prepare_work(notebook, work)
        before = folder_files(work)
        replayed = execute_notebook(copy, env=kernel_env(work / "home", extra=extra),
                                    timeout=180)
        strays = written_outside_run(work, before, notebook.stem)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    problem = drift(comparable(committed, _work_folder(committed)),
                    comparable(replayed, work))
    assert not strays, (f"{notebook.name} wrote outside .run/{notebook.stem}/ (a run in place "
                        f"would leave these in examples/): {strays[:20]}")
    assert not problem, (
        f"{notebook.name} replayed{' with the semantic part off' if extra else ''} with "
        "different outputs than the committed notebook. If the "
        f"change is intended, run examples/make_recordings.py {notebook.name.split('-', 1)[0]}.\n{problem}")


def test_files_written_outside_the_run_folder_are_found(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "home").mkdir(parents=True)
    (work / "02-x.ipynb").write_text("{}")
    before = folder_files(work)
    for rel in (".run/02-x/memory/a.md", "home/.ipython/x", "home/.claude/settings.json",
                "demo-home/02-x/memory/a.md", ".run/03-y/a", "02-x.ipynb.bak"):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text("x")
    (work / "02-x.ipynb").write_text("{} ")  # the notebook saved in place is not new
    assert written_outside_run(work, before, "02-x") == [
        ".run/03-y/a", "02-x.ipynb.bak", "demo-home/02-x/memory/a.md", "home/.claude/settings.json"]
    assert written_outside_run(work, before, "02-x", also=("demo-home/",)) == [
        ".run/03-y/a", "02-x.ipynb.bak", "home/.claude/settings.json"]


def test_comparison_sees_a_changed_answer(tmp_path: Path) -> None:
    """The drift check itself: a different output in one cell is reported with its diff."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1 + 1")]
    nb.cells[0].outputs = [nbformat.v4.new_output(
        "execute_result", {"text/plain": "2"}, execution_count=1)]
    other = nbformat.from_dict(json.loads(nbformat.writes(nb)))
    other.cells[0].outputs[0]["data"]["text/plain"] = "3"
    assert drift(comparable(nb, None), comparable(nb, None)) == ""
    report = drift(comparable(nb, None), comparable(other, None))
    assert "code cell 0" in report and '-  "text/plain": "2"' in report
    stamped = nbformat.from_dict(json.loads(nbformat.writes(nb)))
    stamped.cells[0].outputs[0]["data"]["text/plain"] = f"saved {tmp_path}/x at 2026-03-04T10:00:00Z"
    again = nbformat.from_dict(json.loads(nbformat.writes(stamped)))
    again.cells[0].outputs[0]["data"]["text/plain"] = "saved /elsewhere/x at 2027-01-01T00:00:00.5Z"
    assert drift(comparable(stamped, tmp_path), comparable(again, "/elsewhere")) == ""


# --------------------------------------------------------------------------- the demo runner


def test_kernel_env_keeps_model_variables_out_of_a_replay(tmp_path: Path) -> None:
    base = {"PATH": "/bin", "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://x",
            "JUPYTER_MEMORY_DIR": "/real/memory", "JUPYTER_MEMORY_EXTRACTION": "0",
            "COLUMNS": "80", "HOME": "/home/ana"}
    env = kernel_env(tmp_path / "home", base=base)
    assert env == {"PATH": "/bin", "HOME": str(tmp_path / "home")}
    live = kernel_env(tmp_path / "home", base=base, live=True, extra={"X": "1"})
    assert live["ANTHROPIC_API_KEY"] == "k" and live["X"] == "1"
    assert "JUPYTER_MEMORY_DIR" not in live


def test_a_restart_tag_starts_a_new_kernel(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_markdown_cell("after a restart"),
                nbformat.v4.new_code_cell("'x' in globals()")]
    nb.cells[1].metadata["tags"] = ["restart-kernel"]
    path = tmp_path / "two-kernels.ipynb"
    nbformat.write(nb, str(path))
    done = execute_notebook(path, env=kernel_env(tmp_path / "home"), timeout=60)
    assert done.cells[2].execution_count == 1
    assert done.cells[2].outputs[0]["data"]["text/plain"] == "False"
    assert nbformat.read(str(path), as_version=4).cells[2].outputs  # saved in place


def test_html_copy_uses_static_views_and_keeps_links_working(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("[next](02-next.ipynb) [docs](../docs/index.md) "
                                              "[web](https://example.org) [top](#top)"),
                nbformat.v4.new_code_cell("%memory")]
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", {
        "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2,
                                                     "version_minor": 0},
        "text/html": "<b>static table</b>", "text/plain": "table"})]
    page = write_html(nb, tmp_path / "examples" / "html" / "x.html",
                      links_from=tmp_path / "examples").read_text(encoding="utf-8")
    assert "<b>static table</b>" in page and "abc" not in page
    assert 'href="../02-next.ipynb"' in page and 'href="../../docs/index.md"' in page
    assert 'href="https://example.org"' in page and 'href="#top"' in page
    assert "model_id" in json.dumps(nb.cells[1].outputs[0])  # the notebook itself is untouched


def test_demo_live_without_a_model_says_how_to_connect(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--live"]) == 1
    assert "--live needs a model: set ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_demo_outside_a_checkout_names_the_missing_notebook(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--examples", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    message = capsys.readouterr().err
    assert "02-tour.ipynb does not exist" in message and "--examples DIR" in message


def test_a_missed_prefetch_compares_equal_whether_or_not_the_selector_had_answered() -> None:
    def memory(file: str, decision: str, reason: str, **extra: Any) -> dict[str, Any]:
        return {"file": file, "path": "B", "decision": decision, "reason": reason, **extra}

    waiting = "the selector had not answered yet when this was recorded (the prefetch …)"
    raced = {"answer": "A pie chart.", "recall": {"mode": "prefetch", "selector": {
        "status": "running", "selected": [], "unknown": [], "request": {"model": "m"},
        "answer": None}, "decisions": [
        memory("a.md", "skipped", waiting), memory("b.md", "skipped", waiting)]}}
    ready = {"answer": "A pie chart.", "recall": {"mode": "prefetch", "selector": {
        "status": "done", "selected": ["a.md"], "unknown": [], "request": {"model": "m"},
        "answer": {"selected_memories": ["a.md"]}}, "decisions": [
        memory("a.md", "skipped", "selected and ready, but not attached: …", sent_bytes=9,
               truncated=None),
        memory("b.md", "not_selected", "the model selector (m) did not pick it")]}}
    assert _settle_prefetch_race(raced) == _settle_prefetch_race(ready)
    other = json.loads(json.dumps(ready))
    other["answer"] = "A bar chart."
    assert _settle_prefetch_race(raced) != _settle_prefetch_race(other)
    attached = {"answer": "x", "recall": {"decisions": [memory("a.md", "injected", "attached")]}}
    assert _settle_prefetch_race(attached) is attached  # nothing raced: left as it was


def test_comparison_ignores_how_printed_text_was_split() -> None:
    def notebook(outputs: list[dict[str, Any]]) -> Any:
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("print(1); print(2)")
        cell.outputs = [nbformat.from_dict(o) for o in outputs]
        nb.cells.append(cell)
        return nb

    one = notebook([{"output_type": "stream", "name": "stdout", "text": "a\nb\n"}])
    two = notebook([{"output_type": "stream", "name": "stdout", "text": "a"},
                    {"output_type": "stream", "name": "stdout", "text": "\nb\n"}])
    assert drift(comparable(one, None), comparable(two, None)) == ""
