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

Results are deterministic. A memory may be kept when it matches enough of the message: a
quarter of its information (the IDF mass of its words, unknown words included), or one of
the rarest known words of a longer message (its topics), or its meaning (with the
semantic extra). Its score is a fitted chance that the message needs it; the selector
keeps as many of the likeliest as those chances support (:func:`choose`). So an unrelated
message selects nothing, and a message about several things can still pick one memory
per thing.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import operator
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_memory.memdir.words import FUNCTION_WORDS

__all__ = [
    "FEATURES",
    "HYBRID_POLICY",
    "LABEL",
    "LEXICAL_POLICY",
    "MAX_SELECTED",
    "SITTING_SECONDS",
    "STEMMER",
    "Policy",
    "Ranked",
    "Selection",
    "best_cosine",
    "choose",
    "features",
    "fuse",
    "has_evidence",
    "policy_for",
    "rank",
    "related",
    "select",
    "semantic_status",
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
MIN_COVERAGE = 0.25
OOV_IDF_FACTOR = 0.8
NEGATION_BONUS = 1.15
REFERENCE_BONUS = 1.25
TOOL_WARNING_BONUS = 1.4

# ----------------------------------------------------------------------------- tokens


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words a question is made of but a memory is not about: the function words, and the
#: greetings, fillers and task verbs people wrap a question in.
_STOP = FUNCTION_WORDS | _words(
    """
about above add after again all also am any anyone anything because before being below
between both build calculate change check compute could describe doing done down during each
else even ever every few find further get gets getting give go going got having hello help
here hers hey hi him how if itself just keep know let like list look make me might more most
much myself need needs now off ok okay once only open other ours out over own per please
prepare put quite rather really said same say see show so some something start still such
take tell thank thanks these thing things those through too try under until up update us use
used uses using very via want wants way well what when which while who whom why work write
yes yet yours
"""
)
_NEGATIONS = _words(
    "not no never nor none nobody nothing without avoid avoids don dont doesn doesnt "
    "didn didnt isn isnt aren arent wasn wasnt won wont shouldn shouldnt cannot cant instead"
)
_WORD_RE = re.compile(r"[a-z']+")
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


def _snowball() -> Any:
    """The Snowball English stemmer when ``snowballstemmer`` is installed, else ``None``."""
    try:
        import snowballstemmer
    except ImportError:
        return None
    return snowballstemmer.stemmer("english")


_SNOWBALL = _snowball()
STEMMER = "snowball (english)" if _SNOWBALL is not None else "light suffix stripper"
"""Which stemmer the lexical part uses (shown by ``%memory why``)."""


# Irregular past forms no suffix rule can join with their verb (broke/broken -> break).
_IRREGULAR = {
    past: verb
    for verb, forms in {
        "begin": "began begun", "break": "broke broken", "bring": "brought",
        "build": "built", "buy": "bought", "catch": "caught", "choose": "chose chosen",
        "come": "came", "draw": "drew drawn", "drive": "drove driven", "eat": "ate eaten",
        "fall": "fell fallen", "feel": "felt", "fight": "fought", "find": "found",
        "fly": "flew flown", "forget": "forgot forgotten", "get": "got gotten",
        "give": "gave given", "go": "went gone", "grow": "grew grown", "hear": "heard",
        "hold": "held", "keep": "kept", "know": "knew known", "lead": "led", "leave": "left",
        "lose": "lost", "make": "made", "meet": "met", "pay": "paid", "ride": "rode ridden",
        "rise": "rose risen", "run": "ran", "say": "said", "see": "saw seen", "sell": "sold",
        "send": "sent", "sing": "sang sung", "sit": "sat", "sleep": "slept",
        "speak": "spoke spoken", "spend": "spent", "steal": "stole stolen",
        "swim": "swam swum", "take": "took taken", "teach": "taught", "tell": "told",
        "think": "thought", "throw": "threw thrown", "understand": "understood",
        "wear": "wore worn", "win": "won", "write": "wrote written",
    }.items()
    for past in forms.split()
}


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Snowball's English stemmer (breaks -> break, plus irregular forms: broke -> break),
    or the light stripper without it."""
    word = _IRREGULAR.get(word, word)
    if len(word) <= 3 or not word.isalpha():
        return word
    if _SNOWBALL is not None:
        stemmed: str = _SNOWBALL.stemWord(word)  # snowballstemmer ships no types
        return stemmed
    return _light_stem(word)


def _light_stem(word: str) -> str:
    """A light suffix stripper: enough to join plural, tense and -ation/-ize forms."""
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
    # One string per distinct CJK term (stems come shared from _stem's cache): a long text
    # that repeats its words then holds a pointer per word, not a new string.
    same: dict[str, str] = {}
    for piece in (text,) if len(text) <= PIECE_CHARS else _pieces(text):
        for match in _TOKEN_RE.finditer(_normalise(piece)):
            token = match.group(0)
            if token[0].isascii():
                token = token.split("'", 1)[0]
                if token in _STOP or token in _NEGATIONS or (
                        len(token) < 2 and not token.isdigit()):
                    continue
                out.append(_stem(token))
            else:
                out.extend([same.setdefault(term, term) for term in _cjk_tokens(token)])
    return tuple(out)


PIECE_CHARS = 16_384
"""A long text is normalised and tokenized this many characters at a time (cut at a
space): each pass of :func:`_normalise` then runs over a piece that stays in the CPU's
caches, so a megabyte costs what a thousand short texts cost."""
_CUT = re.compile(r"(?<=\w)\s+(?=\w)")
_NEAR_CUT = ("like", "for")  # "like for like" is one term, across its spaces


def _pieces(text: str) -> Iterable[str]:
    """``text`` in pieces whose normal forms and terms join to those of the whole.

    A cut falls in white space between two word characters (so not before a combining mark
    or inside a hyphenated run) and not next to "like" or "for" ("like for like" is one
    term). Where no such cut comes within a few pieces' length, the rest is one piece.
    """
    start = 0
    while len(text) - start > PIECE_CHARS:
        cut = -1
        for space in _CUT.finditer(text, start + PIECE_CHARS, start + 4 * PIECE_CHARS):
            before = unicodedata.normalize("NFKC", text[max(0, space.start() - 8):space.start()])
            after = unicodedata.normalize("NFKC", text[space.end():space.end() + 8])
            if not (before.lower().endswith(_NEAR_CUT) or after.lower().startswith(_NEAR_CUT)):
                cut = space.end()
                break
        if cut < 0:
            break
        yield text[start:cut]
        start = cut
    yield text[start:]


def has_negation(text: str) -> bool:
    """Whether ``text`` says what not to do (in English, Chinese or Japanese)."""
    # one word at a time, stopping at the first negation: a list of every word of a long
    # text costs memory the text does not, and most answers come early
    words = (m.group() for m in _WORD_RE.finditer(_normalise(text)))
    return any(w in _NEGATIONS for w in words) or any(n in text for n in _CJK_NEGATIONS)


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


# ----------------------------------------------------------------------------- policy

FEATURES = ("lexical", "bm25", "coverage", "semantic", "cosine_gap", "date", "dated",
            "other_entity", "same_sitting")
"""What the fitted model weighs for each memory (see :func:`features`)."""
SITTING_SECONDS = 3600
"""Memories written within this long of each other count as written in one sitting."""


@dataclass(frozen=True)
class Policy:
    """How the parts of a score are weighed and how many memories are attached.

    Fitted on the development split of the LoCoMo evaluation set, never guessed, by
    ``benchmarks/fit_recall.py`` (which prints these values); one policy for the lexical
    selector alone and one for the hybrid. ``weights`` and ``bias`` make a logistic model
    of the chance that a memory is one the message needs, from its :func:`features`; the
    score shown for a memory is that chance. A memory is eligible when its words pass the
    lexical floor and coverage rule, or its meaning passes ``semantic_floor`` (a cosine
    similarity, ``meaning_alone_floor`` when it shares no word). Eligible memories are
    kept best first, as many as make the expected recall plus ``precision_weight`` times
    the expected precision largest (see :func:`choose`): a message with one clear answer
    gets one memory, a message whose chances are spread over several gets several.
    ``expected_floor`` is the least number of needed memories the expected recall
    assumes, so that when every chance is small the best memory alone does not count as
    the whole answer.
    """

    weights: tuple[tuple[str, float], ...]
    bias: float
    precision_weight: float
    expected_floor: float = 1.0
    semantic_floor: float = 1.01
    meaning_alone_floor: float = 1.01

    def weight(self, feature: str) -> float:
        return dict(self.weights).get(feature, 0.0)

    @functools.cached_property
    def vector(self) -> tuple[float, ...]:
        """The weights in :data:`FEATURES` order, the sitting one left at 0 (it is added
        once the likeliest memory is known, see :func:`fuse`)."""
        return tuple(0.0 if name == "same_sitting" else self.weight(name) for name in FEATURES)


LEXICAL_POLICY = Policy(
    weights=(("lexical", 3.44), ("bm25", 1.6), ("coverage", 1.2), ("date", 3.28),
             ("dated", -2.56), ("other_entity", -1.66), ("same_sitting", 0.12)),
    bias=-8.37, precision_weight=0.6, expected_floor=1.0)
HYBRID_POLICY = Policy(
    weights=(("lexical", 1.64), ("bm25", 0.6), ("coverage", 0.9), ("semantic", 1.47),
             ("cosine_gap", -6.86), ("date", 3.5), ("dated", -2.73), ("other_entity", 0.36),
             ("same_sitting", 1.06)),
    bias=-5.33, precision_weight=0.78, expected_floor=0.5, semantic_floor=0.3,
    meaning_alone_floor=0.63)
"""``meaning_alone_floor``: a memory that shares no word with the message needs a cosine
above 95% of the best matches a development question finds among another conversation's
memories (measured by ``benchmarks/fit_recall.py --unrelated``), so an unrelated message
still attaches nothing."""

_ENTITY_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,})(?:'s)?\b")


# ----------------------------------------------------------------------------- ranking


@dataclass(frozen=True)
class Ranked:
    """One memory's score for a query; ``excluded`` says why it was left out, if it was.

    ``score`` orders memories: the fitted chance (0 to 1) that the message needs the
    memory, from its :func:`features` under a :class:`Policy` (1 more for a warning about a
    tool in use, which goes first). The parts it is computed from: ``lexical`` (BM25F, as
    a share of the best memory's), ``semantic`` (the cosine similarity, as a share of the
    spread above the average memory; ``None`` without the semantic extra) and ``date``
    (``None`` when the message names no date). ``lexical_score`` is the raw BM25F score,
    ``similarity`` the raw cosine. ``coverage`` is the share of the message's information
    (IDF mass of its terms) that the memory matches; ``priority`` marks a warning about a
    recently used tool; ``anchor`` is the rare word of the message it matches, if any;
    ``entity`` is whether it names a person or thing the message names (``None`` when the
    message names none); ``mtime`` is when it was written and ``sitting`` whether that was
    within :data:`SITTING_SECONDS` of the likeliest memory (memories written together are
    often about one thing).
    """

    file: str
    score: float
    matched: tuple[str, ...] = ()
    excluded: str | None = None
    coverage: float = 0.0
    priority: bool = False
    anchor: str | None = None
    lexical_score: float = 0.0
    lexical: float = 0.0
    similarity: float | None = None
    semantic: float | None = None
    date: float | None = None
    entity: bool | None = None
    mtime: float = 0.0
    sitting: bool = False

    @property
    def lexical_ok(self) -> bool:
        """Whether its words alone make it eligible (floor and coverage or rare word)."""
        return self.lexical_score >= MIN_SCORE and (
            self.coverage >= MIN_COVERAGE or self.anchor is not None)

    def parts(self) -> str:
        """The parts of the score in words, for ``%memory why``."""
        out = [f"lexical {self.lexical:.2f} (BM25F {self.lexical_score:.1f})"]
        if self.similarity is not None:
            out.append(f"semantic {self.semantic or 0.0:.2f} (cosine {self.similarity:.2f})")
        if self.date is not None:
            out.append(f"date {self.date:.2f}")
        if self.sitting:
            out.append("written with the likeliest memory")
        return ", ".join(out)


@dataclass(frozen=True)
class Selection:
    """The chosen files (best first) and every scored memory, for explanations.

    ``mode`` says which selector ran: ``"lexical"`` or ``"lexical + semantic"``, with
    ``note`` saying why the semantic part is off when it is. ``threshold`` is this
    message's cut (the score of the last memory kept for its evidence), ``best`` the best
    eligible score.
    """

    selected: tuple[Ranked, ...]
    ranked: tuple[Ranked, ...]
    threshold: float
    best: float = 0.0
    scores: dict[str, Ranked] = field(default_factory=dict)
    mode: str = "lexical"
    note: str = ""
    limit: int = MAX_SELECTED
    floor: float = 1.0
    alone_floor: float = 1.01

    @property
    def files(self) -> list[str]:
        return [r.file for r in self.selected]

    @property
    def label(self) -> str:
        """The selector's name with the parts that ran, e.g. ``offline selector (lexical)``."""
        return f"{LABEL} ({self.mode})"

    def reason(self, file: str) -> str:
        """Why ``file`` was or was not chosen, in words for the explain table."""
        item = self.scores.get(file)
        if item is None or (item.score <= 0 and not item.excluded):
            if item is not None and item.similarity is not None:
                return (f"{self.label}: no word or date of the message matches it, and its "
                        f"meaning is no closer than the average memory's (cosine "
                        f"{item.similarity:.2f})")
            return f"{self.label}: nothing in the message matches its name, description or date"
        if item.excluded:
            return f"{self.label}: {item.excluded}"
        words = ", ".join(item.matched[:6]) or "no words"
        facts = (f"score {item.score:.2f} from {item.parts()}; covers {item.coverage:.0%} of "
                 f"the message (matched {words})")
        if item.entity is False:
            facts += "; names none of the people or things the message names"
        if any(r.file == file for r in self.selected):
            why = ""
            if item.priority:
                why = "; a warning about a tool in use"
            elif not item.lexical_ok:
                why = "; chosen for its meaning"
            elif item.coverage < MIN_COVERAGE and item.anchor:
                why = f"; {item.anchor!r} is one of the message's most specific words"
            return f"{self.label}: {facts}{why}"
        eligible = item.lexical_ok or item.priority or (
            item.similarity is not None and item.similarity >= self.floor
            and (item.lexical_score > 0 or item.similarity >= self.alone_floor))
        if not eligible:
            need = f"words: score {MIN_SCORE:.1f} and {MIN_COVERAGE:.0%} coverage or a rare word"
            if item.similarity is not None:
                need += (f"; meaning: cosine {self.floor:.2f} with a shared word, "
                         f"{self.alone_floor:.2f} without")
            return f"{self.label}: {facts}; not enough evidence ({need})"
        if item.score < self.threshold:
            return (f"{self.label}: {facts}; below this message's cut {self.threshold:.2f} "
                    "(one more memory would lower the expected precision more than it "
                    "raises the expected recall)")
        return f"{self.label}: {facts}; outside the best {self.limit} for this message"


@dataclass
class _Doc:
    file: str
    fields: dict[str, Counter[str]]
    lengths: dict[str, int]
    negated: bool
    type: str | None
    text: str
    words: frozenset[str]


def _attr(memory: Any, name: str) -> str:
    value = getattr(memory, name, None)
    if value is None and isinstance(memory, dict):
        value = memory.get(name)
    return "" if value is None else str(value)


def _mtime(memory: Any) -> float:
    value = getattr(memory, "mtime", None)
    if value is None and isinstance(memory, dict):
        value = memory.get("mtime")
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


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
    words = frozenset(re.findall(r"[a-z0-9]+", text.lower()))
    return _Doc(file, fields, {k: sum(v.values()) for k, v in fields.items()},
                has_negation(description) or "_no_" in file or "never" in file, kind, text,
                words)


_Postings = dict[str, list[tuple[int, float]]]
_COLLECTION: tuple[tuple[_Doc, ...], Counter[str], _Postings] | None = None


def _collection(docs: tuple[_Doc, ...]) -> tuple[Counter[str], _Postings]:
    """Document frequencies of ``docs`` and, per term, each memory's length-normalised
    field-weighted term frequency (BM25F's ``tf``, which does not depend on the message).

    Kept for the last set seen: memories change far less often than questions, and the
    docs are cached objects, so an unchanged memdir gives the same tuple.
    """
    global _COLLECTION
    last = _COLLECTION  # one read: another thread may replace it, never change it
    if last is not None and len(last[0]) == len(docs) and all(
            a is b for a, b in zip(last[0], docs, strict=True)):
        return last[1], last[2]
    df: Counter[str] = Counter()
    for doc in docs:
        df.update({t for f in doc.fields.values() for t in f})
    avg = {k: max(1e-9, sum(d.lengths[k] for d in docs) / len(docs)) for k in FIELD_WEIGHTS}
    postings: _Postings = {}
    for i, doc in enumerate(docs):
        terms = {t for f in doc.fields.values() for t in f}
        for term in sorted(terms):
            tf = 0.0
            for name, weight in FIELD_WEIGHTS.items():
                count = doc.fields[name][term]
                if count:
                    norm = 1 - B + B * doc.lengths[name] / avg[name]
                    tf += weight * count / norm
            if tf > 0:
                postings.setdefault(term, []).append((i, tf))
    _COLLECTION = (docs, df, postings)
    return df, postings


def _mentions_tool(doc: _Doc, tool: str) -> bool:
    if re.search(rf"\b{re.escape(tool)}\b", doc.text):
        return True
    loose = rf"(?i)\b{re.escape(tool)}[\s_-]*tool\b"
    if re.search(loose, doc.text):
        return True
    internal_capital = any(c.isupper() for c in tool[1:])
    return internal_capital and re.search(rf"(?i){re.escape(tool)}", doc.text) is not None


def semantic_status() -> tuple[bool, str]:
    """Whether the semantic part runs, and why not (see :mod:`.recall.semantic`)."""
    from jupyter_memory.recall.semantic import status

    return status()


def rank(
    query: str,
    memories: Iterable[Any],
    *,
    recent_tools: Sequence[str] = (),
    now: dt.datetime | None = None,
    semantic: bool | None = None,
    policy: Policy | None = None,
) -> list[Ranked]:
    """Every memory scored for ``query``, best first (ties by file name).

    ``memories`` are :class:`~jupyter_memory.memdir.record.Memory` records or anything with
    ``file``, ``name``, ``description``, ``type`` and (for the date part) ``mtime``.
    ``semantic=None`` uses the semantic part when its extra is installed; relative dates
    in the message count back from ``now``.
    """
    memories = list(memories)
    if semantic is None:
        semantic = semantic_status()[0]
    parts = _parts(query, memories, recent_tools=recent_tools, now=now, semantic=semantic)
    return fuse(parts, policy or policy_for(parts))


def _parts(
    query: str,
    memories: list[Any],
    *,
    recent_tools: Sequence[str],
    now: dt.datetime | None,
    semantic: bool,
) -> list[Ranked]:
    """Each memory's lexical, semantic and date parts, before the policy weighs them."""
    from jupyter_memory.recall import dates as date_part

    docs = [_doc(m) for m in memories]
    if not docs:
        return []
    ranges, rest = date_part.parse(query, now)
    q = _expand(rest if ranges else query)
    n = len(docs)
    df, postings = _collection(tuple(docs))

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
    entities = {e.lower() for e in _ENTITY_RE.findall(query)} - _STOP
    entities = {e for e in entities if any(e in d.words for d in docs)}
    similarities: list[float] | None = None
    if semantic and _mostly_cjk(query):
        semantic = False  # the model reads English: its vectors of CJK text are noise
    if semantic:
        from jupyter_memory.recall.semantic import similarities as cosine

        similarities = cosine(query, [(d.file, _mtime(m), _attr(m, "description") or
                                       _attr(m, "name") or d.file)
                                      for d, m in zip(docs, memories, strict=True)])
    # BM25F through the postings of the message's terms: the work is the matches, not
    # every memory times every term.
    scores = [0.0] * n
    matched_by: list[list[str]] = [[] for _ in range(n)]
    covered_by: list[set[str]] = [set() for _ in range(n)]
    for term, qw in q.weights.items():
        if not df[term]:
            continue
        weight = qw * idf(term)
        for i, tf in postings.get(term, ()):
            scores[i] += weight * tf * (K1 + 1) / (K1 + tf)
            matched_by[i].append(term)
            covered_by[i] |= q.source[term]
    rows = []
    for i, doc in enumerate(docs):
        score = scores[i]
        matched = matched_by[i]
        covered = covered_by[i]
        coverage = sum(idf(t) for t in covered) / mass if covered else 0.0
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
        date = None
        mtime = _mtime(memories[i])
        if ranges:
            date = date_part.score(ranges, date_part.memory_dates(
                _attr(memories[i], "description"), mtime))
        rows.append((doc, matched, excluded, coverage, priority, anchored, round(score, 4),
                     None if similarities is None else round(similarities[i], 4), date, mtime))
    # Each part as a share: of the best (lexical), of the spread above average (semantic).
    live = [row for row in rows if row[2] is None]
    best_lex = max((row[6] for row in live), default=0.0)
    sims = [row[7] for row in live if row[7] is not None]
    mean = sum(sims) / len(sims) if sims else 0.0
    spread = max(sims, default=0.0) - mean
    results: list[Ranked] = []
    for doc, matched, excluded, coverage, priority, anchored, lex, sim, date, mtime in rows:
        semantic_share = None
        if sim is not None:
            semantic_share = round(min(max(0.0, (sim - mean) / spread), 1.0), 4) if (
                spread > 1e-9) else 0.0
        results.append(Ranked(
            doc.file, 0.0, tuple(matched), excluded, round(coverage, 4), priority, anchored,
            lexical=round(min(lex / best_lex, 1.0), 4) if best_lex > 0 else 0.0,
            lexical_score=lex, similarity=sim, semantic=semantic_share, date=date,
            entity=(bool(entities & doc.words) if entities else None), mtime=mtime))
    return results


def _with(r: Ranked, **changes: Any) -> Ranked:
    """A copy of ``r`` with ``changes``: ``dataclasses.replace`` re-runs ``__init__`` and
    was a third of a warm choice among 200 memories."""
    state = dict(r.__dict__)
    state.update(changes)
    out = object.__new__(Ranked)
    object.__setattr__(out, "__dict__", state)
    return out


def _mostly_cjk(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    cjk = sum(1 for ch in letters if not ch.isascii())
    return bool(letters) and cjk / len(letters) > 0.3


def features(r: Ranked, best_cosine: float | None) -> tuple[float, ...]:
    """What :class:`Policy` weighs for one memory, in :data:`FEATURES` order.

    ``best_cosine`` is the best similarity any memory has with the message: how far a
    memory's meaning falls behind it says more than the cosine itself, whose scale moves
    with the message.
    """
    gap = 0.0
    if r.similarity is not None and best_cosine is not None:
        gap = best_cosine - r.similarity
    return (r.lexical, math.log1p(r.lexical_score), r.coverage, r.semantic or 0.0, gap,
            r.date or 0.0, 0.0 if r.date is None else 1.0, 1.0 if r.entity is False else 0.0,
            1.0 if r.sitting else 0.0)


def best_cosine(parts: Sequence[Ranked]) -> float | None:
    """The best similarity a memory that may be attached has with the message."""
    sims = [r.similarity for r in parts if r.excluded is None and r.similarity is not None]
    return max(sims) if sims else None


def related(r: Ranked) -> bool:
    """Whether anything of the message is in the memory: a word, its meaning (above the
    average memory's) or a date. Only these get a score."""
    return r.lexical_score > 0 or (r.semantic or 0) > 0 or bool(r.date)


def has_evidence(r: Ranked, policy: Policy) -> bool:
    """Whether ``r`` may be attached for more than a tool warning: its words pass the
    lexical rule, or its meaning passes the policy's floors."""
    if r.lexical_ok:
        return True
    if r.similarity is None or r.similarity < policy.semantic_floor:
        return False
    return r.lexical_score > 0 or r.similarity >= policy.meaning_alone_floor


def _chance(logit: float) -> float:
    if logit < -30:
        return 0.0
    return 1.0 / (1.0 + math.exp(-logit))


def fuse(parts: Sequence[Ranked], policy: Policy) -> list[Ranked]:
    """The score of each memory under ``policy``, best first (ties by file name).

    The likeliest eligible memory is found without the sitting feature; the memories
    written within :data:`SITTING_SECONDS` of it then get its weight.
    """
    vector = policy.vector
    sitting_weight = policy.weight("same_sitting")
    best = best_cosine(parts)
    logits: list[float | None] = []
    top: Ranked | None = None
    top_logit = -math.inf
    for r in parts:
        if not related(r):
            logits.append(None)
            continue
        logit = policy.bias + sum(map(operator.mul, vector, features(r, best)))
        logits.append(logit)
        if (r.excluded is None and not r.priority and logit > top_logit
                and has_evidence(r, policy)):
            top, top_logit = r, logit
    out = []
    for r, logit in zip(parts, logits, strict=True):
        if logit is None:  # nothing of the message in it: score 0, as ranked
            out.append(r if r.score == 0.0 and not r.sitting else
                       _with(r, score=0.0, sitting=False))
            continue
        sitting = (top is not None and r is not top and r.mtime > 0 and top.mtime > 0
                   and abs(r.mtime - top.mtime) <= SITTING_SECONDS)
        score = _chance(logit + (sitting_weight if sitting else 0.0))
        if r.priority:
            score = 1.0 + score  # warnings about a tool in use come first
        out.append(_with(r, score=round(score, 4), sitting=sitting))
    out.sort(key=lambda r: (-r.score, r.file))
    return out


def choose(
    ranked: Sequence[Ranked], policy: Policy, *, limit: int = MAX_SELECTED
) -> tuple[list[Ranked], float, float]:
    """The memories ``policy`` attaches from fused ``ranked``: (chosen, cut, best).

    Warnings about a tool in use need only the lexical floor and come first; any other
    memory needs evidence (:func:`has_evidence`). Of those, best first, the selector keeps
    the number ``k`` that makes ``recall + precision_weight * precision`` largest, each
    expected from the scores: the sum of the first ``k`` scores over the sum for all
    eligible memories (at least ``expected_floor``), and over ``k``.
    """
    eligible = [r for r in ranked if r.excluded is None and r.score > 0]
    warnings = [r for r in eligible if r.priority and r.lexical_score >= MIN_SCORE]
    others = [r for r in eligible if not r.priority and has_evidence(r, policy)]
    best = others[0].score if others else 0.0
    kept = warnings[: max(limit, 0)]
    room = max(limit, 0) - len(kept)
    expected = max(policy.expected_floor, sum(r.score for r in others), 1e-9)
    count, value, total = 0, -math.inf, 0.0
    for k, r in enumerate(others[:room], 1):
        total += r.score
        here = total / expected + policy.precision_weight * total / k
        if here > value:
            count, value = k, here
    kept += others[:count]
    cut = others[count - 1].score if count else best
    return kept, cut, best


def select(
    query: str,
    memories: Iterable[Any],
    *,
    recent_tools: Sequence[str] = (),
    limit: int = MAX_SELECTED,
    now: dt.datetime | None = None,
    semantic: bool | None = None,
) -> Selection:
    """The memories worth attaching for ``query``: at most ``limit``, maybe none.

    With the semantic extra installed (and ``semantic`` not ``False``) the score weighs
    words, meaning and dates under :data:`HYBRID_POLICY`; otherwise words and dates under
    :data:`LEXICAL_POLICY` (also for a mostly Chinese or Japanese message, whose meaning
    is not compared). :attr:`Selection.mode` and :attr:`Selection.note` say which.
    """
    available, note = semantic_status()
    use = available if semantic is None else (semantic and available)
    if use:
        note = ""
    elif available:
        note = "semantic part off for this call"
    parts = _parts(query, list(memories), recent_tools=recent_tools, now=now, semantic=use)
    policy = policy_for(parts)
    ranked = fuse(parts, policy)
    chosen, cut, best = choose(ranked, policy, limit=limit)
    return Selection(tuple(chosen), tuple(ranked), cut, best, {r.file: r for r in ranked},
                     mode="lexical + semantic" if use else "lexical", note=note,
                     limit=limit, floor=policy.semantic_floor,
                     alone_floor=policy.meaning_alone_floor)


def policy_for(parts: Sequence[Ranked]) -> Policy:
    """The hybrid policy when the message's meaning was compared, else the lexical one."""
    return HYBRID_POLICY if any(r.similarity is not None for r in parts) else LEXICAL_POLICY
