"""English function words, the one list every text heuristic starts from.

Articles, pronouns, auxiliaries, prepositions and conjunctions: words that say nothing about
what a memory is about. Each user adds the words its own job ignores (the offline selector
its task verbs and greetings; name derivation its "always", "never", "please") by name.
"""

from __future__ import annotations

__all__ = ["FUNCTION_WORDS"]

_FUNCTION_WORDS = """
a an and are as at be been but by can did do does for from had has have he her his i in into
is it its must my of on or our she should than that the their them then there they this to
was we were will with would you your
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
