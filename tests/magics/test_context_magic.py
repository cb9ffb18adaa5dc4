"""``%context --count`` in a real IPython shell: the endpoint's count is what is shown."""

from __future__ import annotations

import json

from shell_helpers import run

from jupyter_memory.localapi import Turn, estimate_request_tokens


def test_count_wins_over_the_last_usage_once_a_turn_has_happened(ip, fake_api):
    fake_api.script([Turn(text="There are 3 rows.")])
    run(ip, "%agent How many rows?")
    after_turn = json.loads(run(ip, "%context --json").stdout)
    assert after_turn["source"] == "usage"

    counted = json.loads(run(ip, "%context --count --json").stdout)
    [request] = [r for r in fake_api.requests if r.path == "/v1/messages/count_tokens"]
    assert counted["source"] == "count_tokens"
    assert counted["used"] == estimate_request_tokens(request.body)
    # The rows of each category add up to its total either way (the view shows the rest).
    assert sum(c["tokens"] for c in counted["categories"][:-2]) == counted["used"]
