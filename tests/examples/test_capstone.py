"""The capstone exercise (examples/exercises/06-capstone-rewrite-descriptions.ipynb): its
baseline is what the notebook says, and a better set of descriptions passes its grade.

The better descriptions live here, not in the notebook: the notebook is the learner's to fill.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import pytest

from jupyter_memory import grade_recall
from jupyter_memory.errors import ConfigError

EXERCISE = Path(__file__).resolve().parents[2] / "examples" / "exercises"
NAME = "06-capstone-rewrite-descriptions"
MEMDIR = EXERCISE / NAME / "memories"
QUESTIONS = json.loads((EXERCISE / NAME / "questions.json").read_text(encoding="utf-8"))[
    "questions"]

#: One rewrite that passes: what each memory knows, in the words of someone who needs it.
BETTER = {
    'project_revenue_units.md': "Revenue column of the orders table is stored in cents, not euros: divide by 100",
    'project_fiscal_year.md': "Fiscal year starts on 1 February; Q1 is February to April",
    'project_churn_definition.md': "Churn definition: a customer with no order for 90 days counts as churned",
    'feedback_sql_style.md': "SQL style: upper-case keywords, one clause per line, CTEs instead of nested subqueries",
    'feedback_no_pie_charts.md': "Never use pie charts; use a sorted horizontal bar chart for shares",
    'feedback_colour_palette.md': "Plot colours: use the colour-blind safe viridis palette in every chart",
    'reference_revenue_dashboard.md': "Revenue dashboard lives in Metabase, collection Finance, board 12",
    'reference_jira_project.md': "Analytics tickets go to the Jira project ANA",
    'project_q3_forecast.md': "Q3 revenue forecast is due to the finance team on 15 September",
    'user_role.md': "Ana is a senior data analyst on the growth team, fluent in SQL, newer to pandas",
    'feedback_explain_pandas.md': "Explain pandas vectorised operations step by step instead of using them silently",
    'project_timezone.md': "Order timestamps are stored in UTC; convert to Europe/Berlin only for display",
    'feedback_missing_values.md': "Missing values: never fill NaN with zero silently; report the count and ask first",
    'project_bot_filter.md': "Exclude bot traffic: filter sessions where is_bot is true before computing conversion",
    'project_vip_segment.md': "VIP segment: customers with more than 2,000 euros lifetime spend",
    'reference_mlflow.md': "MLflow tracking server for model experiments is at mlflow.internal:5000",
    'project_checkout_experiment.md': "Checkout A/B test: one-page checkout until 30 November; primary metric conversion",
    'feedback_ab_no_peeking.md': "A/B tests: do not peek at significance before the planned end date",
    'project_conversion_rate.md': "Conversion rate: orders divided by non-bot sessions, per day",
    'reference_slack_channels.md': "Slack channels: post results in #growth-analytics, incidents in #data-incidents",
    'feedback_figure_size.md': "Figures: 8 by 4.5 inches, titles in sentence case, no chart junk",
    'reference_s3_exports.md': "Raw event exports are in the S3 bucket s3://acme-raw/events/, one Parquet file per day",
    'project_cac.md': "Customer acquisition cost (CAC): paid marketing spend divided by new customers, monthly",
    'project_ltv_model.md': "Lifetime value (LTV) model: BG/NBD with Gamma-Gamma, retrained every quarter",
    'reference_etl_runbook.md': "ETL runbook: how to rerun a failed nightly Airflow job is in Confluence page DATA-42",
    'feedback_no_select_star.md': "Never write SELECT * in production queries; name the columns",
    'project_currency.md': "Currency conversion: convert USD and GBP orders to euros with the daily ECB rate table fx_rates",
    'user_manager.md': "Ana's manager is Priya, head of growth; she reviews every report before it is shared",
    'feedback_time_split.md': "Model validation: split train and test by time, never randomly, to avoid leakage",
    'project_nps_survey.md': "NPS survey results come from Typeform every month; scores 9-10 are promoters",
}


def _notebook_constant(name: str) -> object:
    """The value a cell of the notebook assigns to ``name`` (a literal)."""
    nb = nbformat.read(str(EXERCISE / f"{NAME}.ipynb"), as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.source.lstrip().startswith("%%"):
            continue
        python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                            for line in cell.source.split("\n"))
        for node in ast.parse(python).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
                return ast.literal_eval(node.value)
    raise AssertionError(f"{NAME}.ipynb assigns no {name}")


def test_the_fixture_is_thirty_memories_and_forty_questions() -> None:
    files = {p.name for p in MEMDIR.glob("*.md")} - {"MEMORY.md"}
    assert len(files) == 30 and len(QUESTIONS) == 40
    assert {f for q in QUESTIONS for f in q["expected"]} <= files
    assert sum(1 for q in QUESTIONS if not q["expected"]) == 4
    assert set(BETTER) == files


def test_the_baseline_is_what_the_notebook_says() -> None:
    baseline = grade_recall(MEMDIR, QUESTIONS)
    said = _notebook_constant("BASELINE")
    assert isinstance(said, dict)
    assert {k: round(getattr(baseline, k), 3) for k in said} == said
    assert baseline.within_cap and not baseline.passes(baseline)


def test_the_notebook_starts_from_the_committed_descriptions() -> None:
    new = _notebook_constant("NEW")
    assert isinstance(new, dict)
    mine = grade_recall(MEMDIR, QUESTIONS, new)
    assert mine.recall == grade_recall(MEMDIR, QUESTIONS).recall
    assert not mine.passes(grade_recall(MEMDIR, QUESTIONS), recall_gain=0.10)


def test_better_descriptions_pass_the_grade() -> None:
    baseline = grade_recall(MEMDIR, QUESTIONS)
    better = grade_recall(MEMDIR, QUESTIONS, BETTER)
    assert better.within_cap, better.over_cap
    assert better.recall > baseline.recall + 0.10 and better.precision >= baseline.precision
    assert better.passes(baseline, recall_gain=0.10)
    # The files are untouched: the grade puts descriptions in place only in memory.
    assert grade_recall(MEMDIR, QUESTIONS).recall == baseline.recall


def test_a_description_over_the_index_cap_fails_the_grade() -> None:
    baseline = grade_recall(MEMDIR, QUESTIONS)
    long = dict(BETTER, **{"project_fiscal_year.md": BETTER["project_fiscal_year.md"] + (
        "; the finance team closes the books at the end of January, so January reports "
        "are final only in February")})
    graded = grade_recall(MEMDIR, QUESTIONS, long)
    assert graded.over_cap == ("project_fiscal_year.md",)
    assert not graded.within_cap and not graded.passes(baseline)
    assert "over the index cap: project_fiscal_year.md" in graded.summary()


def test_a_repeated_word_costs_precision() -> None:
    noisy = {f: f"revenue {d}" for f, d in BETTER.items()}
    assert grade_recall(MEMDIR, QUESTIONS, noisy).precision < grade_recall(
        MEMDIR, QUESTIONS, BETTER).precision


@pytest.mark.parametrize(("questions", "descriptions", "message"), [
    ([{"question": "Where?"}], None, r"needs a 'question' \(text\) and an 'expected' list"),
    ([], None, "at least one question"),
    (QUESTIONS, {"project_nope.md": "x"}, "no memory file named project_nope.md"),
])
def test_bad_input_says_what_was_wrong(questions, descriptions, message) -> None:
    with pytest.raises(ConfigError, match=message):
        grade_recall(MEMDIR, questions, descriptions)


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a folder of memories"):
        grade_recall(tmp_path / "absent", QUESTIONS)
