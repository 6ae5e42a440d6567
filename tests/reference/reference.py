#!/usr/bin/env python3
"""The reference side of envaware's differential test.

Reads scenarios (JSON Lines, see docs/scenario-format.md, v1) from a
file or standard input and runs AgentScope 2.0.11's real
``Agent._inject_runtime_state`` on each, with the clock frozen at the
scenario's ``now``. Writes one result line per scenario, in order:

- ``{"hint": str | null, "event": bool}``: what the reference injected;
- ``{"error": "..."}``: the reference (pydantic, ``Agent``) rejects the
  configuration, or the line is not a valid scenario;
- ``{"crash": "Type: message"}``: the reference itself raised while
  injecting (e.g. ``IsADirectoryError`` for the zone ``America``); such lines
  are excluded from the comparison.

Usage: ``reference.py [--stats] [FILE]`` (``-`` or no FILE: standard input).
``--stats`` prints counts to standard error at the end.

Run it with the Python of a venv made from requirements.txt (agentscope
2.0.11, tzdata 2025.2). It sets ``LC_TIME=C`` and reads zones only from the
``tzdata`` package, so results do not depend on the host.
"""
import os

# Before anything imports time/locale-dependent code.
os.environ["LC_TIME"] = "C"

import asyncio  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import locale  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
import zoneinfo  # noqa: E402
from datetime import datetime  # noqa: E402

locale.setlocale(locale.LC_TIME, "C")
# Only the pinned tzdata package, never the host's /usr/share/zoneinfo.
zoneinfo.reset_tzpath(to=[])

import agentscope  # noqa: E402
from agentscope.agent import _agent as agent_module  # noqa: E402
from agentscope.agent import Agent  # noqa: E402
from agentscope.agent._config import (  # noqa: E402
    ContextConfig,
    InjectionConfig,
)
from agentscope.event import HintBlockEvent  # noqa: E402
from agentscope.message import Msg  # noqa: E402
from agentscope.state import AgentState  # noqa: E402
from agentscope.state._task import Task  # noqa: E402

if agentscope.__version__ != "2.0.11":
    sys.exit(f"reference.py needs agentscope 2.0.11, found {agentscope.__version__}")

# The fallback-to-UTC warning and the deprecation warning are expected here.
logging.getLogger("as").setLevel(logging.CRITICAL + 1)
warnings.simplefilter("ignore")


class FrozenDatetime(datetime):
    """``datetime`` whose ``now`` returns the scenario's instant; every other
    method (``strptime`` included) is the real one."""

    frozen: datetime | None = None

    @classmethod
    def now(cls, tz=None):  # noqa: D102
        if cls.frozen is None:
            raise RuntimeError("clock not frozen")
        if tz is None:
            # Naive local time is never used by the injection; keep it
            # deterministic anyway.
            return cls.frozen.replace(tzinfo=None)
        return cls.frozen.astimezone(tz)


# `_agent.py` does `from datetime import datetime`; patch that name only.
agent_module.datetime = FrozenDatetime


class FakeModel:
    """Duck-typed chat model: only what the injection reads."""

    def __init__(self, context_size, input_tokens):
        self.context_size = context_size
        self._input_tokens = input_tokens

    async def count_tokens(self, **_kwargs):
        return self._input_tokens


async def _empty_model_input():
    return {}


class ScenarioError(Exception):
    """The scenario itself is malformed (not a configuration the reference
    could even be given)."""


def _reject_constant(name):
    raise ValueError(f"invalid JSON constant {name}")


def _as_int(scenario, key, default):
    value = scenario.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"'{key}' must be an integer, got {value!r}")
    if value < 0:
        raise ScenarioError(f"'{key}' must not be negative, got {value}")
    return value


def build_agent(scenario):
    """Builds the agent from a scenario. Any exception here means the
    configuration (or the scenario) is rejected."""
    if not isinstance(scenario, dict):
        raise ScenarioError("a scenario must be a JSON object")

    if "now" not in scenario or not isinstance(scenario["now"], str):
        raise ScenarioError("'now' is required, an RFC 3339 string")
    now = datetime.fromisoformat(scenario["now"])
    if now.tzinfo is None:
        raise ScenarioError("'now' must carry an offset")

    name = scenario.get("agent_name", "agent")
    if not isinstance(name, str):
        raise ScenarioError("'agent_name' must be a string")

    injection = scenario.get("injection_config", {}) or {}
    context = scenario.get("context_config", {}) or {}
    if not isinstance(injection, dict) or not isinstance(context, dict):
        raise ScenarioError("configs must be JSON objects")
    # Pydantic's lax mode, exactly as a user constructing the configs.
    injection_config = InjectionConfig(**injection)
    context_config = ContextConfig(**context)

    context_size = _as_int(scenario, "context_size", 128000)
    input_tokens = _as_int(scenario, "input_tokens", 0)
    cur_iter = _as_int(scenario, "cur_iter", 0)

    tasks_in = scenario.get("tasks", []) or []
    if not isinstance(tasks_in, list):
        raise ScenarioError("'tasks' must be a list")
    tasks = []
    for task in tasks_in:
        if not isinstance(task, dict):
            raise ScenarioError("a task must be a JSON object")
        fields = {"subject": "task", "description": "", "metadata": {}}
        if "state" in task:
            fields["state"] = task["state"]
        tasks.append(Task(**fields))

    msgs_in = scenario.get("context", []) or []
    if not isinstance(msgs_in, list):
        raise ScenarioError("'context' must be a list")
    msgs = [Msg.model_validate(m) for m in msgs_in]

    state = AgentState()
    state.context = msgs
    state.tasks_context.tasks = tasks
    state.cur_iter = cur_iter

    agent = Agent(
        name=name,
        system_prompt="",
        model=FakeModel(context_size, input_tokens),
        state=state,
        context_config=context_config,
        injection_config=injection_config,
    )
    # Awaited only so that the model can count tokens; the count is given.
    agent._prepare_model_input = _empty_model_input
    return agent, now


async def run_injection(agent):
    event = False
    async for ev in agent._inject_runtime_state():
        if isinstance(ev, HintBlockEvent):
            event = True
    return event


def evaluate(line, loop):
    """Returns the result object for one scenario line."""
    try:
        scenario = json.loads(line, parse_constant=_reject_constant)
        agent, now = build_agent(scenario)
    except RecursionError as exc:
        return {"error": f"RecursionError: {exc}"}
    except Exception as exc:  # noqa: BLE001 - every rejection is a result
        return {"error": f"{type(exc).__name__}: {exc}"}

    before = len(agent.state.context)
    last_before = agent.state.context[-1] if before else None
    last_len = len(last_before.content) if last_before is not None else 0
    FrozenDatetime.frozen = now
    try:
        event = loop.run_until_complete(run_injection(agent))
    except Exception as exc:  # noqa: BLE001 - RecursionError, OSError, ...
        return {"crash": f"{type(exc).__name__}: {exc}"[:500]}
    finally:
        FrozenDatetime.frozen = None

    # The hint, if any, was appended: to a new message, or to the last one.
    ctx = agent.state.context
    hint = None
    if len(ctx) > before:
        hint = ctx[-1].content[-1].hint
    elif last_before is not None and len(last_before.content) > last_len:
        hint = last_before.content[-1].hint
    if hint is not None and not isinstance(hint, str):
        # The injection always writes a string.
        return {"crash": "unexpected non-string hint"}
    return {"hint": hint, "event": event}


def _focus_of(raw):
    try:
        value = json.loads(raw)
        return str(value.get("_focus", "-")) if isinstance(value, dict) \
            else "-"
    except Exception:  # noqa: BLE001
        return "-"


def iter_lines(stream):
    """Yields the lines of a binary stream split on b"\\n" only (str.splitlines
    would also split on \\x1c, \\u2028, ...). Completely empty lines are
    skipped; a trailing newline does not make an extra line."""
    data = stream.read()
    for raw in data.split(b"\n"):
        if raw.strip(b" \t\r") == b"":
            continue
        yield raw


def main(argv):
    stats = False
    path = None
    for arg in argv[1:]:
        if arg == "--stats":
            stats = True
        elif arg in ("-h", "--help"):
            print(__doc__)
            return 0
        elif path is None:
            path = arg
        else:
            print("usage: reference.py [--stats] [FILE]", file=sys.stderr)
            return 2

    if path is None or path == "-":
        lines = iter_lines(sys.stdin.buffer)
    else:
        with open(path, "rb") as f:
            lines = list(iter_lines(f))

    # Deep argument JSON recurses in json.loads; allow what CPython can.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))

    loop = asyncio.new_event_loop()
    counts = collections.Counter()
    by_focus = collections.defaultdict(collections.Counter)
    out = sys.stdout
    for raw in lines:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            result = {"error": f"invalid UTF-8: {exc}"}
        else:
            result = evaluate(text, loop)
        out.write(json.dumps(result) + "\n")
        if stats:
            focus = _focus_of(raw)
            if "error" in result:
                counts["error"] += 1
                by_focus[focus]["error"] += 1
            elif "crash" in result:
                counts["crash"] += 1
                counts["crash " + result["crash"].split(":")[0]] += 1
                by_focus[focus]["crash"] += 1
            else:
                counts["ok"] += 1
                h = result["hint"]
                if h is None:
                    counts["no hint"] += 1
                    by_focus[focus]["no hint"] += 1
                else:
                    counts["hint"] += 1
                    by_focus[focus]["hint"] += 1
                    for dim in ("current-time", "tasks", "context-length",
                                "tool-error"):
                        if f"<{dim}>" in h:
                            counts[f"hint has <{dim}>"] += 1
                if result["event"]:
                    counts["event"] += 1
    out.flush()
    loop.close()
    if stats:
        total = counts["ok"] + counts["error"] + counts["crash"]
        print(f"scenarios: {total}", file=sys.stderr)
        for key in sorted(counts):
            print(f"  {key}: {counts[key]}", file=sys.stderr)
        if len(by_focus) > 1:
            print("by focus (generator's _focus key):", file=sys.stderr)
            for focus in sorted(by_focus):
                c = by_focus[focus]
                print(f"  {focus:16} " + "  ".join(
                    f"{k}={c[k]}" for k in ("hint", "no hint", "error",
                                            "crash")), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
