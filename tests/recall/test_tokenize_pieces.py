"""A long text is tokenized in pieces (recall/offline.py): the terms are those of the whole."""

from __future__ import annotations

import random

import pytest

from jupyter_memory.recall import offline


def terms(text: str) -> tuple[str, ...]:
    offline._tokens.cache_clear()
    return tuple(offline.tokenize(text))


def whole_and_pieces(monkeypatch: pytest.MonkeyPatch, text: str,
                     piece: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    monkeypatch.setattr(offline, "PIECE_CHARS", 10**9)
    whole = terms(text)
    monkeypatch.setattr(offline, "PIECE_CHARS", piece)
    assert "".join(offline._pieces(text)) == text
    return whole, terms(text)


@pytest.mark.parametrize("seed", range(5))
def test_pieces_give_the_terms_of_the_whole(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    words = ["revenue ", "region ", "weekly ", "camelCaseWord ", "数据框 ", "한국어 ", "ｱｲ ",
             "don't ", "p-value ", "ﬁle ", "Σ ", "\n", "\t"]
    tricky = ["like ", "for ", "ＬＩＫＥ ", "- ", "\u0301", "a/b ", "% ", "’", " ", "like"]
    units = words * 3 + tricky
    rng = random.Random(seed)
    text = "".join(rng.choice(units) for _ in range(3000))
    monkeypatch.setattr(offline, "PIECE_CHARS", 16)  # a cut every few words
    assert len(list(offline._pieces(text))) > 20
    whole, pieces = whole_and_pieces(monkeypatch, text, 16)
    assert pieces == whole


def test_a_cut_never_splits_like_for_like(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "sales like  -  for - like growth ＬＩＫＥ for like " * 20
    whole, pieces = whole_and_pieces(monkeypatch, text, 4)
    assert pieces == whole
    assert len([t for t in whole if t.startswith("likefor")]) == 40
