"""The reference's bytes on every rewrite (issue 28.6).

The memories in ``fixtures/memdir-reference-shapes`` are written the way current Claude
Code versions write them (its README states the rule): a rewrite keeps untouched fields
and lines byte-identical, replaces ``modified`` in place in the form and precision it was
found in, keeps quotes when a value does not change, keeps the blank line after the
header and keeps hand-written index titles. Each store operation is run on a copy and
the result compared with the original byte for byte, apart from the lines it meant to
change.
"""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from jupyter_memory.agent.tools import ToolContext, default_registry
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.doctor import doctor, repair
from jupyter_memory.memdir.store import MemoryStore

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "memdir-reference-shapes"
FILES = ("MEMORY.md", "feedback_weekly_report_format.md", "project_migration_plan.md",
         "reference_warehouse_schema.md", "report_q3_variance.md")
MS_Z = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


@pytest.fixture
def memdir(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    folder.mkdir()
    for name in FILES:
        shutil.copyfile(SHAPES / name, folder / name)
    return folder


def original(name: str) -> str:
    return (SHAPES / name).read_bytes().decode("utf-8")


def now(memdir: Path, name: str) -> str:
    return (memdir / name).read_bytes().decode("utf-8")


def untouched(memdir: Path, *changed: str) -> None:
    """Every fixture file not in ``changed`` is still byte for byte the reference's."""
    for name in FILES:
        if name not in changed:
            assert (memdir / name).read_bytes() == (SHAPES / name).read_bytes(), name


def modified_line(text: str) -> str:
    lines = [line for line in text.split("\n") if line.strip().startswith("modified:")]
    assert len(lines) == 1, text
    return lines[0]


def test_update_of_a_description_changes_that_line_and_modified_only(memdir: Path) -> None:
    store = MemoryStore(memdir, mark_provenance=False)
    name = "feedback_weekly_report_format.md"
    store.update(name, description="Weekly KPI report: one table per region, totals at the end")
    before, after = original(name), now(memdir, name)
    stamp = modified_line(after)
    assert re.fullmatch(rf"  modified: {MS_Z}", stamp)  # in place, unquoted, milliseconds, Z
    expected = before.replace(
        'description: "Weekly KPI report: one table per region, totals last — no charts"',
        'description: "Weekly KPI report: one table per region, totals at the end"',
    ).replace("  modified: 2026-10-14T08:03:51.207Z", stamp)
    assert after == expected  # the quotes of the new value follow the old one's
    untouched(memdir, name)  # the index too: its title and hook were written by hand


def test_an_update_that_repeats_a_value_keeps_its_quotes_and_the_blank_line(
    memdir: Path,
) -> None:
    store = MemoryStore(memdir, mark_provenance=False)
    name = "feedback_weekly_report_format.md"
    store.update(name, name="weekly-report-format",
                 description="Weekly KPI report: one table per region, totals last — no charts",
                 type="feedback", body="Totals last, one table per region.\n")
    before, after = original(name), now(memdir, name)
    head, _, _ = before.partition("---\n\n")
    expected = (head.replace("  modified: 2026-10-14T08:03:51.207Z", modified_line(after))
                + "---\n\nTotals last, one table per region.\n")
    assert after == expected
    untouched(memdir, name)


def test_modified_is_added_in_the_references_form_where_it_was_missing(memdir: Path) -> None:
    store = MemoryStore(memdir, mark_provenance=False)
    name = "project_migration_plan.md"
    store.update(name, body="## 顺序\n\n先迁移维度表。\n")
    after = now(memdir, name)
    stamp = modified_line(after)
    assert re.fullmatch(rf"  modified: {MS_Z}", stamp)
    before = original(name)
    expected = before.replace(
        "  originSessionId: 0a9c7e21-64b8-4d3f-8c12-5e7f90b1d3a6\n",
        f"  originSessionId: 0a9c7e21-64b8-4d3f-8c12-5e7f90b1d3a6\n{stamp}\n",
    ).replace("## 顺序\n\n先维表，后事实表。\n", "## 顺序\n\n先迁移维度表。\n")
    assert after == expected
    assert "metadata: \n" in after  # the trailing space after the colon stays
    untouched(memdir, name)


def test_unknown_type_extra_keys_and_a_quoted_name_survive_an_update(memdir: Path) -> None:
    store = MemoryStore(memdir, mark_provenance=False)
    name = "report_q3_variance.md"
    store.update(name, body="# Open question\n\nCheck the FX conversion, then the calendar.\n")
    after = now(memdir, name)
    stamp = modified_line(after)
    expected = original(name).replace("  topic: variance\n", f"  topic: variance\n{stamp}\n")
    expected = expected.replace("Check the FX conversion first.",
                                "Check the FX conversion, then the calendar.")
    assert after == expected
    untouched(memdir, name)


def test_provenance_is_a_switch_and_goes_where_the_shape_keeps_its_fields(
    memdir: Path,
) -> None:
    name = "reference_warehouse_schema.md"
    MemoryStore(memdir).update(name, body="`sales_v` ist eine Ansicht.\n", provenance="user")
    after = now(memdir, name)
    stamp = modified_line(after)
    expected = original(name).replace(
        "  modified: 2026-11-02T17:45:09.880Z\n", f"{stamp}\n  origin: user\n"
    ).replace("`sales_v` ist eine Ansicht; `sales` ist die echte Tabelle.", "`sales_v` ist "
              "eine Ansicht.")
    assert after == expected
    doc = frontmatter.parse(after)
    assert doc.shape == "nested" and doc.metadata["origin"] == "user"


def test_a_changed_name_keeps_the_hand_written_index_title(memdir: Path) -> None:
    store = MemoryStore(memdir, mark_provenance=False)
    name = "reference_warehouse_schema.md"
    store.update(name, name="lager-schema")
    assert "name: lager-schema\n" in now(memdir, name)
    untouched(memdir, name)  # "- [Warehouse schema](…) — views vs tables" as written


def test_the_agents_edit_tool_changes_the_edited_text_and_modified(memdir: Path,
                                                                    tmp_path: Path) -> None:
    store = MemoryStore(memdir, mark_provenance=False)
    ctx = ToolContext(project_root=tmp_path, memdir=memdir, store=store, provenance="agent")
    tools = default_registry()
    name = "feedback_weekly_report_format.md"
    assert not tools.run("Read", {"file_path": str(memdir / name)}, ctx).is_error
    result = tools.run("Edit", {"file_path": str(memdir / name),
                                "old_string": "no charts in the weekly report",
                                "new_string": "no charts and no pie charts in the weekly report"},
                       ctx)
    assert not result.is_error, result.content
    after = now(memdir, name)
    expected = original(name).replace(
        "  modified: 2026-10-14T08:03:51.207Z", modified_line(after)
    ).replace("no charts in the weekly report", "no charts and no pie charts in the weekly report")
    assert after == expected
    untouched(memdir, name)


def test_rename_moves_the_bytes_and_only_the_link_target(memdir: Path) -> None:
    store = MemoryStore(memdir)
    store.rename("project_migration_plan.md", "project_migration_order.md")
    assert (memdir / "project_migration_order.md").read_bytes() == (
        SHAPES / "project_migration_plan.md").read_bytes()
    assert now(memdir, "MEMORY.md") == original("MEMORY.md").replace(
        "](project_migration_plan.md)", "](project_migration_order.md)")


def test_forget_drops_one_index_line_and_nothing_else(memdir: Path) -> None:
    MemoryStore(memdir).forget("report_q3_variance.md")
    assert now(memdir, "MEMORY.md") == original("MEMORY.md").replace(
        "- [Q3 variance](report_q3_variance.md) — open question\n", "")
    assert not (memdir / "report_q3_variance.md").exists()
    for name in FILES[1:4]:
        assert now(memdir, name) == original(name)


def test_repair_and_doctor_leave_the_reference_memdir_as_it_is(memdir: Path) -> None:
    store = MemoryStore(memdir)
    assert not [f for f in doctor(store, check_projects=False) if f.fixable]
    report = repair(store)
    assert not report.changed
    untouched(memdir)


@pytest.mark.parametrize(("found", "written"), [
    ("2026-10-14T08:03:51.207Z", "2027-01-02T03:04:05.678Z"),
    ('"2026-10-14T08:03:51.207Z"', '"2027-01-02T03:04:05.678Z"'),
    ("'2026-10-14T08:03:51Z'", "'2027-01-02T03:04:05Z'"),
    ("2026-10-14T08:03:51.207123Z", "2027-01-02T03:04:05.678901Z"),
    ("2026-10-14 08:03:51", "2027-01-02 03:04:05"),
    ("2026-10-14T10:03:51+02:00", "2027-01-02T05:04:05+02:00"),
    ("2026-10-14T10:03+0200", "2027-01-02T05:04+0200"),
    ("2026-10-14", "2027-01-02"),
    ("yesterday", "2027-01-02T03:04:05.678Z"),
])
def test_a_stamp_takes_the_form_it_replaces(found: str, written: str) -> None:
    stamp = frontmatter.Stamp(datetime(2027, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc))
    text = f"---\nname: x\nmodified: {found}\n---\nbody\n"
    assert frontmatter.update(text, {"modified": stamp}) == (
        f"---\nname: x\nmodified: {written}\n---\nbody\n")
