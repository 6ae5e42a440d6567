#!/usr/bin/env python3
"""The reference side of envaware's request differential test.

Usage: ``formatter.py SCENARIOS RESULTS``

SCENARIOS is what ``envaware-sim replay --emit-scenarios`` wrote (one
scenario a step, an empty line for a step with the clock unset), RESULTS
what ``envaware-sim replay --json --request openai`` printed for the same
trace (one line a step). For each step with a scenario this runs
AgentScope 2.0.11 itself on it: the real ``Agent._inject_runtime_state``
(which appends the hint with ``AgentState.append_context`` under the
scenario's ``reply_id``; a step with envaware's own live readings appends
envaware's hint with it), then the real ``Agent._prepare_model_input``
(system prompt, the compressed ``summary``, the context) and
``OpenAIChatFormatter.format``. The ``messages`` it returns must equal the
step's ``request``, as JSON values.

Prints ``requests: I identical / T compared, C reference crashes`` and, for
the first few that differ, both sides; exits 1 when any differs.
"""
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import reference  # noqa: E402  (sets LC_TIME, the frozen clock, zones)
from agentscope.agent import Agent  # noqa: E402
from agentscope.formatter import OpenAIChatFormatter  # noqa: E402
from agentscope.message import HintBlock  # noqa: E402


async def reference_request(scenario, hint):
    """The messages AgentScope sends after this step's injection. A step
    with live readings (envaware's own, which AgentScope has no rule for)
    appends envaware's ``hint`` with AgentScope's own ``append_context``."""
    agent, now = reference.build_agent(scenario)
    agent.state.reply_id = scenario["reply_id"]
    agent._system_prompt = scenario.get("system_prompt", "")
    agent.state.summary = scenario.get("summary") or ""
    if "readings" in scenario:
        if hint is not None:
            source = agent.injection_config.injection_source
            agent.state.append_context(agent.name, [HintBlock(hint=hint, source=source)])
    else:
        reference.FrozenDatetime.frozen = now
        try:
            async for _ in agent._inject_runtime_state():
                pass
        finally:
            reference.FrozenDatetime.frozen = None
    model_input = await Agent._prepare_model_input(agent)
    return await OpenAIChatFormatter().format(model_input["messages"])


def main(argv):
    if len(argv) != 3:
        print("usage: formatter.py SCENARIOS RESULTS", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        scenarios = f.read().split("\n")
    with open(argv[2], encoding="utf-8") as f:
        results = [line for line in f.read().split("\n") if line]
    if scenarios and scenarios[-1] == "":
        scenarios.pop()
    if len(scenarios) != len(results):
        print(f"{len(scenarios)} scenarios but {len(results)} results", file=sys.stderr)
        return 2
    loop = asyncio.new_event_loop()
    same = compared = crashes = 0
    shown = 0
    for number, (raw, line) in enumerate(zip(scenarios, results), 1):
        if not raw:
            continue
        result = json.loads(line)
        if "request" not in result:
            print(f"step {number}: no request in the result line", file=sys.stderr)
            return 2
        scenario = json.loads(raw)
        try:
            expected = loop.run_until_complete(
                reference_request(scenario, result.get("hint")))
        except Exception as exc:  # noqa: BLE001 - counted, not compared
            crashes += 1
            if shown < 3:
                print(f"step {number}: the reference raised {type(exc).__name__}: {exc}"[:400])
                shown += 1
            continue
        compared += 1
        # Through JSON, as the request goes on the wire.
        if json.loads(json.dumps(expected)) == result["request"]:
            same += 1
        elif shown < 5:
            shown += 1
            print(f"step {number} differs:")
            print("  agentscope:", json.dumps(expected)[:2000])
            print("  envaware:  ", json.dumps(result["request"])[:2000])
    loop.close()
    print(f"requests: {same} identical / {compared} compared, {crashes} reference crashes")
    return 0 if same == compared and compared > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
