"""The offline selector: picks memories for a message without calling a model.

It ranks memories by the same text the model selector sees (file name, ``name``,
``description`` and ``type``) with BM25F: per-field weights and length normalisation,
light English stemming, stop words, and CJK character bigrams so Chinese and Japanese
messages match memories written in those languages. Three additions make it work on
what data scientists actually type:

- a small bilingual glossary of data-science terms expands the query ("chart" also looks
  for "plot", "グラフ", "图表"), so paraphrases and cross-language questions still match;
- negation is never thrown away with the word it negates: "we do not use pandas" looks
  for memories about pandas, and a memory that says "never use X" still matches X;
- with a list of recently used tools, memories that merely document one of those tools
  are left out while warnings about them are kept (the reference's selector rule).

Results are deterministic. A memory is kept when its score passes a floor and 60% of the
best score, and it matches enough of the message: a quarter of its information (the IDF
mass of its words, unknown words included), or one of the rarest known words of a longer
message (its topics). So an unrelated message selects nothing, and a message about
several things can still pick one memory per thing.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LABEL",
    "MAX_SELECTED",
    "Ranked",
    "Selection",
    "rank",
    "select",
    "tokenize",
]

LABEL = "offline selector"
"""How results of this module are labelled wherever they are shown."""
MAX_SELECTED = 5

# Ranking parameters (tuned on tests/recall_eval; see benchmarks/eval_recall.py).
K1 = 1.2
B = 0.75
FIELD_WEIGHTS = {"name": 0.9, "description": 1.0, "type": 0.5}
EXPANSION_WEIGHT = 0.35
MIN_SCORE = 2.0
RELATIVE_TO_BEST = 0.6
MIN_COVERAGE = 0.25
OOV_IDF_FACTOR = 0.8
NEGATION_BONUS = 1.15
REFERENCE_BONUS = 1.25
TOOL_WARNING_BONUS = 1.4

# ----------------------------------------------------------------------------- tokens



def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _words(
    """
a about above after again all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each else even ever
every few for from further get gets getting give go going got had has have having he her
here hers him his how i if in into is it its itself just let like make me might more most
much must my myself need needs now of off on once only or other our ours out over own
please put quite rather really said same say see she should show so some still such take
tell than thank thanks that the their them then there these they thing things this those
through to too try under until up us use used uses using very want wants was way we well
were what when which while who whom why will with would yes yet you your yours
ok okay hi hello hey anyone something anything
add build calculate change check compute describe find give help keep know list look
open per prepare start tell update via work write
"""
)
_NEGATIONS = _words(
    "not no never nor none nobody nothing without avoid avoids don dont doesn doesnt "
    "didn didnt isn isnt aren arent wasn wasnt won wont shouldn shouldnt cannot cant instead"
)
_CJK_NEGATIONS = ("不", "没", "别", "勿", "禁止", "避免", "ない", "ません", "禁止", "しない", "ず")
_CJK_STOP_CHARS = frozenset("的了吗呢吧啊我你他她们这那么是在把被请哪该也都就不没别")
_CJK_STOP = frozenset(
    ["怎么", "什么", "如何", "可以", "一下", "需要", "应该", "为什", "有没", "没有", "时候",
     "方法", "場合", "方法", "問題"]
)
_REFERENCE_CUES = _words(
    "where link url dashboard board wiki docs documentation page channel contact tracker "
    "ticket find located lives"
)
_REFERENCE_CUES_CJK = ("哪里", "在哪", "链接", "看板", "どこ", "リンク", "連絡")
_WARNING_CUES = re.compile(
    r"(?i)\b(warn\w*|gotcha\w*|bug\w*|issue\w*|known|pitfall\w*|careful|beware|caution|"
    r"avoid\w*|never|not|don'?t|do not|break\w*|block\w*|freez\w*|froze|corrupt\w*|fail\w*|"
    r"crash\w*|hang\w*|slow\w*|trap\w*|wrong|lose\w*|loses|overwrit\w*)\b"
)
_TOKEN_RE = re.compile(
    r"[a-z0-9]+(?:'[a-z]+)?"
    r"|[\u3040-\u309f]+"  # hiragana
    r"|[\u30a0-\u30ff\u31f0-\u31ff]+"  # katakana
    r"|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]+"  # han
    r"|[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+"  # hangul
)
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_LETTER_HYPHEN_RE = re.compile(r"\b([a-z])-([a-z]{2,})")
_LIKE_FOR_LIKE_RE = re.compile(r"\blike[\s-]+for[\s-]+like\b")
_SUFFIXES = (
    ("ational", "ate"), ("ization", "ize"), ("isation", "ize"), ("ations", "ate"),
    ("ation", "ate"), ("ality", "al"), ("ity", ""), ("ings", ""), ("ing", ""), ("iness", "y"), ("ness", ""),
    ("ments", ""), ("ment", ""), ("ies", "y"), ("ied", "y"), ("edly", ""), ("ed", ""),
    ("ly", ""), ("es", ""), ("s", ""),
)


def _stem(word: str) -> str:
    """A light suffix stripper: enough to join plural, tense and -ation/-ize forms."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "sses", "xes", "zes")):
                return word[:-1]
            stem = word[: -len(suffix)] + repl
            if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # running -> run, planned -> plan
            return stem
    return word


def _is_han(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith("CJK")


def _cjk_tokens(run: str) -> list[str]:
    first = run[0]
    if "\u3040" <= first <= "\u309f":  # hiragana: particles and endings, not topics
        return []
    if "\u30a0" <= first <= "\u30ff" or "\u31f0" <= first <= "\u31ff":  # katakana word
        return [run] if len(run) > 1 else []
    if _is_han(first):
        if len(run) == 1:
            return [] if run in _CJK_STOP_CHARS else [run]
        grams = [run[i : i + 2] for i in range(len(run) - 1)]
        return [g for g in grams if g not in _CJK_STOP and not (set(g) & _CJK_STOP_CHARS)]
    grams = [run[i : i + 2] for i in range(len(run) - 1)] if len(run) > 2 else []
    return [run, *grams]  # hangul: the word and its bigrams


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _CAMEL_RE.sub(" ", text)
    text = text.lower().replace("’", "'").replace("n't", " not")
    text = text.replace("a/b", "ab").replace("%", " percent ")
    text = _LIKE_FOR_LIKE_RE.sub("likeforlike", text)
    return _LETTER_HYPHEN_RE.sub(r"\1\2", text)  # p-value -> pvalue, t-test -> ttest


def tokenize(text: str) -> list[str]:
    """Index terms of ``text``: stemmed words without stop words or negations, CJK bigrams.

    Negations are dropped as terms (they carry no topic), but never the word they negate.
    """
    return list(_tokens(text))


@functools.lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[str, ...]:
    """Cached: the same descriptions are tokenized on every turn."""
    out: list[str] = []
    for match in _TOKEN_RE.finditer(_normalise(text)):
        token = match.group(0)
        if token[0].isascii():
            token = token.split("'", 1)[0]
            if token in _STOP or token in _NEGATIONS or (len(token) < 2 and not token.isdigit()):
                continue
            out.append(_stem(token))
        else:
            out.extend(_cjk_tokens(token))
    return tuple(out)


def has_negation(text: str) -> bool:
    """Whether ``text`` says what not to do (in English, Chinese or Japanese)."""
    words = set(re.findall(r"[a-z']+", _normalise(text)))
    return bool(words & _NEGATIONS) or any(n in text for n in _CJK_NEGATIONS)


# ----------------------------------------------------------------------------- glossary

_GLOSSARY_SOURCE: tuple[tuple[str, ...], ...] = (
    ("dataframe", "data frame", "pandas", "polars", "df", "数据框", "データフレーム"),
    ("plot", "chart", "figure", "graph", "visualization", "matplotlib", "plt", "seaborn", "图表",
     "绘图", "作图", "画图", "可视化", "グラフ", "図表", "可視化", "プロット"),
    ("color", "colour", "palette", "colormap", "颜色", "配色", "色"),
    ("revenue", "sales", "income", "turnover", "gmv", "收入", "营收", "销售额", "销售",
     "売上", "収益"),
    ("customer", "client", "buyer", "客户", "顾客", "顧客", "お客様"),
    ("date", "day", "calendar", "日期", "日付", "日にち"),
    ("timestamp", "datetime", "time", "时间", "時刻", "時間"),
    ("timezone", "time zone", "tz", "utc", "时区", "タイムゾーン"),
    ("missing", "null", "nan", "empty", "na", "缺失", "空值", "欠損", "欠測"),
    ("model", "classifier", "regressor", "模型", "モデル"),
    ("train", "retrain", "fit", "training", "训练", "学習"),
    ("forecast", "prediction", "predict", "projection", "预测", "予測", "見通し"),
    ("database", "db", "warehouse", "snowflake", "postgres", "sql", "数据库", "数仓",
     "データベース", "データウェアハウス"),
    ("query", "queries", "select", "查询", "クエリ"),
    ("dashboard", "board", "report page", "看板", "仪表盘", "仪表板", "ダッシュボード"),
    ("deadline", "due", "due date", "submit", "截止", "期限", "締め切り", "締切", "提出"),
    ("slow", "performance", "speed", "fast", "memory error", "慢", "性能", "遅い", "速度"),
    ("delete", "remove", "drop", "erase", "删除", "削除"),
    ("duplicate", "dedupe", "deduplicate", "repeated", "重复", "重複"),
    ("currency", "exchange rate", "fx", "euro", "eur", "dollar", "usd", "pound", "gbp", "货币",
     "汇率", "欧元", "通貨", "為替", "ユーロ"),
    ("report", "summary", "write-up", "报告", "报表", "レポート", "報告", "資料"),
    ("experiment", "ab test", "variant", "split test", "实验", "实验组", "実験",
     "abテスト"),
    ("feature", "features", "predictor", "特征", "特徴量"),
    ("notebook", "jupyter", "ipynb", "笔记本", "ノートブック"),
    ("environment", "venv", "conda", "install", "package", "library", "dependency", "pip",
     "环境", "依赖", "安装", "環境", "ライブラリ", "インストール"),
    ("join", "merge", "combine", "合并", "关联", "結合", "マージ"),
    ("group", "groupby", "aggregate", "aggregation", "分组", "聚合", "汇总", "集計"),
    ("churn", "cancel", "attrition", "lapse", "流失", "解約", "離脱"),
    ("cluster", "spark", "distributed", "集群", "クラスタ"),
    ("email", "mail", "newsletter", "邮件", "メール"),
    ("meeting", "call", "sync", "会议", "会議", "打ち合わせ"),
    ("manager", "boss", "lead", "head", "经理", "领导", "上司"),
    ("chinese", "mandarin", "中文", "汉语", "中国語"),
    ("japanese", "日本語", "日语"),
    ("japan", "tokyo", "日本", "东京", "東京"),
    ("china", "中国", "华东", "中国区"),
    ("tax", "vat", "税", "消费税", "消費税", "税込"),
    ("fiscal", "financial year", "fiscal year", "会计年度", "财年", "会計年度", "年度"),
    ("store", "shop", "branch", "门店", "店铺", "店舗", "店"),
    ("price", "pricing", "cost", "价格", "定价", "価格", "値段"),
    ("discount", "promo", "promotion", "coupon", "voucher", "折扣", "优惠", "割引", "クーポン"),
    ("holiday", "public holiday", "节假日", "假期", "祝日", "休日"),
    ("outlier", "extreme", "whale", "skew", "winsorise", "winsorize", "异常值", "外れ値"),
    ("distribution", "histogram", "spread", "heavy tail", "long tail", "分布", "ヒストグラム"),
    ("mean", "average", "avg", "median", "平均", "均值", "中央値", "中位数"),
    ("confidence interval", "ci", "error bar", "uncertainty", "置信区间", "信頼区間"),
    ("test", "testing", "pytest", "unit test", "测试", "テスト"),
    ("leakage", "leak", "future data", "泄漏", "リーク"),
    ("metric", "kpi", "measure", "指标", "指標"),
    ("conversion", "convert", "转化", "转化率", "コンバージョン"),
    ("contact", "ask", "person", "owner", "who", "联系", "负责人", "問い合わせ", "担当"),
    ("font", "typeface", "字体", "フォント"),
    ("privacy", "pii", "personal data", "gdpr", "隐私", "个人信息", "個人情報"),
    ("segment", "cohort", "tier", "分群", "细分", "セグメント"),
    ("parquet", "file format", "csv", "export", "导出", "エクスポート"),
    ("print", "display", "show", "output", "打印", "输出", "表示", "出力"),
    ("reproducible", "deterministic", "seed", "random state", "rerun", "复现", "随机种子", "再現"),
    ("style", "format", "formatting", "convention", "house style", "风格", "格式", "書式", "形式"),
    ("executive", "leadership", "cfo", "ceo", "board", "c-level", "高管", "管理层", "経営陣"),
    ("peek", "early stop", "stop early", "interim", "提前停止", "途中"),
    ("definition", "define", "defined", "meaning", "formula", "定义", "含义", "定義"),
    ("english", "spelling", "british", "英语", "英語"),
    ("language", "reply", "answer", "语言", "回答", "言語", "返答"),
)


def _glossary() -> list[list[tuple[str, ...]]]:
    groups = []
    for members in _GLOSSARY_SOURCE:
        forms = [tuple(tokenize(m)) for m in members]
        groups.append([f for f in forms if f])
    return groups


_GROUPS = _glossary()


@dataclass(frozen=True)
class _Query:
    """Query terms with weights; ``source`` maps each term to the query terms behind it."""

    terms: tuple[str, ...]
    weights: dict[str, float]
    source: dict[str, frozenset[str]]


def _expand(text: str) -> _Query:
    """The message's own terms at weight 1, glossary relatives at a lower weight."""
    terms = tuple(dict.fromkeys(tokenize(text)))
    weights = dict.fromkeys(terms, 1.0)
    source = {t: frozenset([t]) for t in terms}
    present = set(terms)
    for group in _GROUPS:
        triggers = [form for form in group if set(form) <= present]
        if not triggers:
            continue
        behind = frozenset(t for form in triggers for t in form)
        for form in group:
            if len(form) > 1 and any(t.isascii() for t in form):
                continue  # a phrase only triggers; its single words would match too loosely
            for term in form:
                if term not in weights:
                    weights[term] = EXPANSION_WEIGHT / len(form)
                    source[term] = behind
                elif weights[term] < 1.0:
                    source[term] = source[term] | behind
    return _Query(terms, weights, source)


# ----------------------------------------------------------------------------- ranking


@dataclass(frozen=True)
class Ranked:
    """One memory's score for a query; ``excluded`` says why it was left out, if it was.

    ``coverage`` is the share of the message's information (IDF mass of its terms) that
    the memory matches; ``priority`` marks a warning about a recently used tool;
    ``anchor`` is the rare word of the message it matches, if any.
    """

    file: str
    score: float
    matched: tuple[str, ...] = ()
    excluded: str | None = None
    coverage: float = 0.0
    priority: bool = False
    anchor: str | None = None


@dataclass(frozen=True)
class Selection:
    """The chosen files (best first) and every scored memory, for explanations."""

    selected: tuple[Ranked, ...]
    ranked: tuple[Ranked, ...]
    threshold: float
    best: float = 0.0
    scores: dict[str, Ranked] = field(default_factory=dict)

    @property
    def files(self) -> list[str]:
        return [r.file for r in self.selected]

    def reason(self, file: str) -> str:
        """Why ``file`` was or was not chosen, in words for the explain table."""
        item = self.scores.get(file)
        if item is None or item.score <= 0:
            return f"{LABEL}: no term of the message matches its name or description"
        if item.excluded:
            return f"{LABEL}: {item.excluded}"
        words = ", ".join(item.matched[:6])
        facts = f"score {item.score:.1f}, covers {item.coverage:.0%} of the message"
        if any(r.file == file for r in self.selected):
            why = ""
            if item.priority:
                why = "; a warning about a tool in use"
            elif item.coverage < MIN_COVERAGE and item.anchor:
                why = f"; {item.anchor!r} is one of the message's most specific words"
            return f"{LABEL}: {facts} (matched {words}){why}"
        if item.coverage < MIN_COVERAGE and not item.priority and item.anchor is None:
            return f"{LABEL}: {facts}, under the {MIN_COVERAGE:.0%} needed (matched {words})"
        if item.score < self.threshold:
            return (f"{LABEL}: {facts}, below the threshold {self.threshold:.1f} "
                    f"(matched {words})")
        return f"{LABEL}: {facts}, outside the best {MAX_SELECTED}"


@dataclass
class _Doc:
    file: str
    fields: dict[str, Counter[str]]
    lengths: dict[str, int]
    negated: bool
    type: str | None
    text: str


def _attr(memory: Any, name: str) -> str:
    value = getattr(memory, name, None)
    if value is None and isinstance(memory, dict):
        value = memory.get(name)
    return "" if value is None else str(value)


def _doc(memory: Any) -> _Doc:
    return _doc_of(_attr(memory, "file"), _attr(memory, "name"), _attr(memory, "description"),
                   _attr(memory, "type") or None)


@functools.lru_cache(maxsize=4096)
def _doc_of(file: str, name: str, description: str, kind: str | None) -> _Doc:
    """Cached per memory text: a memdir's descriptions rarely change between turns."""
    stem = re.sub(r"\.md$", "", file).replace("/", " ").replace("_", " ").replace("-", " ")
    name_terms = tokenize(stem)
    name_terms += [t for t in tokenize(name.replace("-", " ").replace("_", " "))
                   if t not in name_terms]
    fields = {
        "name": Counter(name_terms),
        "description": Counter(tokenize(description)),
        "type": Counter([kind] if kind else []),
    }
    text = f"{file} {name} {description}"
    return _Doc(file, fields, {k: sum(v.values()) for k, v in fields.items()},
                has_negation(description) or "_no_" in file or "never" in file, kind, text)


def _mentions_tool(doc: _Doc, tool: str) -> bool:
    if re.search(rf"\b{re.escape(tool)}\b", doc.text):
        return True
    loose = rf"(?i)\b{re.escape(tool)}[\s_-]*tool\b"
    if re.search(loose, doc.text):
        return True
    internal_capital = any(c.isupper() for c in tool[1:])
    return internal_capital and re.search(rf"(?i){re.escape(tool)}", doc.text) is not None


def rank(
    query: str, memories: Iterable[Any], *, recent_tools: Sequence[str] = ()
) -> list[Ranked]:
    """Every memory scored for ``query``, best first (ties by file name).

    ``memories`` are :class:`~jupyter_memory.memdir.record.Memory` records or anything with
    ``file``, ``name``, ``description`` and ``type``.
    """
    docs = [_doc(m) for m in memories]
    if not docs:
        return []
    q = _expand(query)
    n = len(docs)
    df: Counter[str] = Counter()
    for doc in docs:
        df.update({t for f in doc.fields.values() for t in f})
    avg = {k: max(1e-9, sum(d.lengths[k] for d in docs) / n) for k in FIELD_WEIGHTS}

    def idf(term: str) -> float:
        count = df[term]
        if not count:
            return OOV_IDF_FACTOR * math.log(1 + (n + 0.5) / 0.5)
        return math.log(1 + (n - count + 0.5) / (count + 0.5))

    mass = sum(idf(t) for t in q.terms) or 1.0
    # In a long message the rarest known words name its topics; matching one is enough.
    known = sorted((t for t in q.terms if df[t]), key=lambda t: (-idf(t), t))
    anchors = known[: (len(known) + 1) // 2] if len(known) >= 3 else []
    query_negated = has_negation(query)
    wants_reference = bool(set(re.findall(r"[a-z]+", _normalise(query))) & _REFERENCE_CUES)
    wants_reference = wants_reference or any(cue in query for cue in _REFERENCE_CUES_CJK)
    results: list[Ranked] = []
    for doc in docs:
        score = 0.0
        matched: list[str] = []
        covered: set[str] = set()
        for term, qw in q.weights.items():
            if not df[term]:
                continue
            tf = 0.0
            for name, weight in FIELD_WEIGHTS.items():
                count = doc.fields[name][term]
                if count:
                    norm = 1 - B + B * doc.lengths[name] / avg[name]
                    tf += weight * count / norm
            if tf <= 0:
                continue
            score += qw * idf(term) * tf * (K1 + 1) / (K1 + tf)
            matched.append(term)
            covered |= q.source[term]
        coverage = sum(idf(t) for t in covered) / mass
        anchored = next((t for t in anchors if t in matched), None)
        if score > 0:
            if query_negated and doc.negated:
                score *= NEGATION_BONUS
            if wants_reference and doc.type == "reference":
                score *= REFERENCE_BONUS
        excluded = None
        priority = False
        for tool in recent_tools:
            if tool and _mentions_tool(doc, tool):
                if _WARNING_CUES.search(doc.text):
                    if score > 0:  # a warning about a tool in use, and related to the message
                        score = score * TOOL_WARNING_BONUS + MIN_SCORE
                        priority = True
                else:
                    excluded = (f"plain usage notes for {tool}, which the agent has just used "
                                "without errors")
                break
        results.append(Ranked(doc.file, round(score, 4), tuple(matched), excluded,
                              round(coverage, 4), priority, anchored))
    results.sort(key=lambda r: (-r.score, r.file))
    return results


def select(
    query: str,
    memories: Iterable[Any],
    *,
    recent_tools: Sequence[str] = (),
    limit: int = MAX_SELECTED,
) -> Selection:
    """The memories worth attaching for ``query``: at most ``limit``, maybe none.

    A memory is chosen when its score passes the floor and a share of the best score, and
    it covers enough of the message or matches one of its rarest words; warnings about a
    tool the agent is using need only the floor and come first.
    """
    ranked = rank(query, memories, recent_tools=recent_tools)
    eligible = [r for r in ranked if r.excluded is None and r.score > 0]
    best = max((r.score for r in eligible if not r.priority), default=0.0)
    threshold = max(MIN_SCORE, RELATIVE_TO_BEST * best)
    warnings = [r for r in eligible if r.priority and r.score >= MIN_SCORE]
    others = [r for r in eligible if not r.priority and r.score >= threshold
              and (r.coverage >= MIN_COVERAGE or r.anchor is not None)]
    kept = {r.file for r in (warnings + others)[: max(limit, 0)]}
    chosen = [r for r in eligible if r.file in kept]
    return Selection(tuple(chosen), tuple(ranked), threshold, best, {r.file: r for r in ranked})
