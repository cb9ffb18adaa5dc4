"""Model limits and the context thresholds derived from them (docs/reference.md#compaction).

One table holds every model's context window and maximum output; every threshold the
project shows or acts on (effective window, warning, autocompact, blocking, the
autocompact buffer) is computed from it here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from jupyter_memory.memdir import trust_table

#: The Sonnet model this project uses by default.
DEFAULT_SONNET = "claude-sonnet-5-5"
#: The main model, unless ``JUPYTER_MEMORY_MODEL`` or ``Agent.model`` names another.
DEFAULT_MODEL = DEFAULT_SONNET
#: The model of the side calls (``Agent.small_model``): the recall selector and the session
#: notes. A Sonnet model, because the reference's selector is one: its source asks "Sonnet
#: to select the most relevant" memories. ``JUPYTER_MEMORY_SMALL_MODEL`` (or
#: ``%config Agent.small_model``) names a smaller one, such as ``claude-haiku-4-5``.
DEFAULT_SMALL_MODEL = DEFAULT_SONNET

#: Output tokens reserved for the summary when deriving the effective window.
SUMMARY_OUTPUT_RESERVE = 20_000
#: Distance below the effective window at which automatic compaction starts.
AUTOCOMPACT_MARGIN = 13_000
#: Distance below the autocompact level at which a warning is shown.
WARNING_MARGIN = 20_000
#: Distance below the effective window at which a request is refused.
BLOCKING_MARGIN = 3_000
#: The smallest window ``Agent.context_window`` may set. The margins above take 53,000
#: tokens below the window for a model with a large output; the rest keeps the warning
#: level above the system prompt and tools that every request carries.
MIN_CONTEXT_WINDOW = 60_000


@dataclass(frozen=True)
class ModelInfo:
    """What the context budget of one model is made of."""

    name: str
    context_window: int
    max_output_tokens: int
    known: bool = True
    #: The model table's window when a smaller ``context_window`` replaced it, else 0.
    model_window: int = 0


# Prefix → (context window, maximum output tokens). Longest prefix wins, so a dated
# model id such as ``claude-sonnet-4-5-20250929`` finds its family.
_MODELS: dict[str, tuple[int, int]] = {
    "claude-fable-5": (1_000_000, 128_000),
    "claude-mythos-5": (1_000_000, 128_000),
    "claude-opus-5": (1_000_000, 128_000),
    "claude-sonnet-5": (1_000_000, 128_000),
    "claude-opus-4-8": (1_000_000, 128_000),
    "claude-opus-4-7": (1_000_000, 128_000),
    "claude-opus-4-6": (1_000_000, 128_000),
    "claude-sonnet-4-6": (200_000, 64_000),
    "claude-opus-4-5": (200_000, 64_000),
    "claude-opus-4-1": (200_000, 32_000),
    "claude-opus-4": (200_000, 32_000),
    "claude-sonnet-4-5": (200_000, 64_000),
    "claude-sonnet-4": (200_000, 64_000),
    "claude-haiku-4-5": (200_000, 64_000),
    "claude-3-7-sonnet": (200_000, 64_000),
    "claude-3-5-sonnet": (200_000, 8_192),
    "claude-3-5-haiku": (200_000, 8_192),
    "claude-3-haiku": (200_000, 4_096),
}
_FALLBACK = (200_000, 32_000)


def model_info(name: str, context_window: int = 0) -> ModelInfo:
    """Limits of ``name``; an unknown model gets a 200K window (``known`` is False, and
    :func:`unknown_model_note` says so wherever the budget is shown).

    ``context_window`` (the ``Agent.context_window`` setting) replaces the table's window
    when it is positive and smaller; a larger one is ignored, since the endpoint would
    refuse what does not fit the model's own window.
    """
    best = ""
    for prefix in _MODELS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    window, out = _MODELS[best] if best else _FALLBACK
    if 0 < context_window < window:
        return ModelInfo(name, context_window, out, bool(best), model_window=window)
    return ModelInfo(name, window, out, bool(best))


def known_models() -> tuple[str, ...]:
    """The model families of the table (a dated id such as ``claude-sonnet-4-5-20250929``
    finds its family by prefix)."""
    return tuple(_MODELS)


def unknown_model_note(name: str) -> str | None:
    """What to tell a person whose model is not in the table, or None when it is.

    An unknown name is a warning, not an error: an endpoint behind ``ANTHROPIC_BASE_URL``
    may serve models under names of its own. The budgets then assume the fallback window,
    so the note says which one and lists the names the table knows.
    """
    info = model_info(name)
    if info.known:
        return None
    return (f"{name} is not in the model table, so budgets assume a {info.context_window:,}-token "
            f"window and {info.max_output_tokens:,} output tokens. Known models (a dated id "
            f"finds its family): {', '.join(known_models())}. Check the model name "
            "(JUPYTER_MEMORY_MODEL, %config Agent.model, or --model).")


def default_model(env: Mapping[str, str] | None = None) -> str:
    """The main model: ``JUPYTER_MEMORY_MODEL``, else :data:`DEFAULT_MODEL`."""
    return trust_table.env("JUPYTER_MEMORY_MODEL", env) or DEFAULT_MODEL


def default_small_model(env: Mapping[str, str] | None = None) -> str:
    """The side calls' model: ``JUPYTER_MEMORY_SMALL_MODEL``, else
    :data:`DEFAULT_SMALL_MODEL` (a Sonnet model, the reference's choice for the selector).

    It does not follow ``JUPYTER_MEMORY_MODEL``: the reference picks its selector's model
    whatever the main model is.
    """
    return trust_table.env("JUPYTER_MEMORY_SMALL_MODEL", env) or DEFAULT_SMALL_MODEL


@dataclass(frozen=True)
class Thresholds:
    """Token levels of one context window, lowest first."""

    window: int
    effective: int
    warning: int
    autocompact: int
    blocking: int

    @property
    def autocompact_buffer(self) -> int:
        """Tokens above the autocompact level: shown as reserved in ``%context``."""
        return self.window - self.autocompact

    def level(self, used: int) -> str:
        """``ok``, ``warning``, ``autocompact`` or ``blocking`` for ``used`` tokens."""
        if used >= self.blocking:
            return "blocking"
        if used >= self.autocompact:
            return "autocompact"
        if used >= self.warning:
            return "warning"
        return "ok"

    def to_json(self) -> dict[str, int]:
        data = asdict(self)
        data["autocompact_buffer"] = self.autocompact_buffer
        return data


def thresholds(info: ModelInfo, max_output_tokens: int | None = None) -> Thresholds:
    """The compaction levels (docs/reference.md#compaction): for a 200K window, 180K / 147K / 167K / 177K."""
    out = info.max_output_tokens if max_output_tokens is None else max_output_tokens
    effective = info.context_window - min(out, SUMMARY_OUTPUT_RESERVE)
    autocompact = effective - AUTOCOMPACT_MARGIN
    return Thresholds(
        window=info.context_window,
        effective=effective,
        warning=autocompact - WARNING_MARGIN,
        autocompact=autocompact,
        blocking=effective - BLOCKING_MARGIN,
    )
