"""copy_json: a deep copy of JSON-shaped data, containers new, leaves shared."""

from __future__ import annotations

from collections import OrderedDict

from jupyter_memory.context.json_copy import copy_json


def test_copy_json_copies_every_container_and_keeps_the_leaves():
    class Node(dict):
        """A dict subclass: copied as a plain dict."""

    value = {"a": [1, 2.5, True, None, "s", {"b": [[]]}], "c": Node(d=[{"e": 0}]),
             "f": OrderedDict(g=1), "t": (1, [2])}
    copied = copy_json(value)
    assert copied == value
    assert type(copied["c"]) is dict and type(copied["f"]) is dict
    assert copied["a"] is not value["a"] and copied["a"][5] is not value["a"][5]
    assert copied["c"]["d"][0] is not value["c"]["d"][0]
    assert copied["t"] == (1, [2]) and copied["t"][1] is not value["t"][1]
    copied["a"][5]["b"][0].append(1)
    assert value["a"][5]["b"] == [[]]
