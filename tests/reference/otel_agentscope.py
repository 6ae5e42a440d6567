#!/usr/bin/env python3
"""One session through AgentScope 2.0.11's own tracing, for the side by
side with ``envaware-sim export`` (docs/otel.md).

Usage: ``otel_agentscope.py OTLP_URL MODEL_URL TRACE_OUT``

A real ``Agent`` (the reasoning-acting loop, ``_inject_runtime_state``,
``OpenAIChatModel`` and its formatter, a tool that fails) talks to the
scripted model server at MODEL_URL (``envaware-sim model-server`` with
``tests/reference/otel_agentscope.script.jsonl``: the only double is the
language model). AgentScope's ``TracingMiddleware`` exports its spans to
OTLP_URL (``/v1/traces``, protobuf, as AgentScope's own exporter sends
them), under ``service.name`` ``agentscope``.

At each model call a recording middleware writes the same session as an
``envaware-sim replay`` trace to TRACE_OUT: the clock, the reply, the
token count, the context the step decided on (AgentScope's own ``Msg``
JSON, without the hint the step appended) and the ``step`` with the hint
AgentScope appended, which the replay must decide again. ``envaware-sim
export TRACE_OUT`` then sends envaware's spans of the same steps.

Prints one JSON line: ``{"model_calls": N, "hints": [text or null, ...]}``.
"""
import asyncio
import json
import os
import sys
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import reference  # noqa: E402  (LC_TIME, the frozen clock, zones)
from agentscope.agent import Agent  # noqa: E402
from agentscope.agent._config import InjectionConfig  # noqa: E402
from agentscope.credential import OpenAICredential  # noqa: E402
from agentscope.message import HintBlock, Msg, TextBlock  # noqa: E402
from agentscope.middleware import MiddlewareBase, TracingMiddleware  # noqa: E402
from agentscope.model import OpenAIChatModel  # noqa: E402
from agentscope.permission import PermissionBehavior, PermissionDecision  # noqa: E402
from agentscope.tool import ToolBase, ToolChunk, Toolkit  # noqa: E402
from agentscope.tool._response import ToolResultState  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: E402
    OTLPSpanExporter,
)
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402

AGENT = "Rover"
SYSTEM_PROMPT = "You are Rover, a greenhouse robot."
INJECTION = {"timezone": "Asia/Shanghai", "time_interval": 0.5}
START = datetime(2026, 7, 22, 2, 0, tzinfo=timezone.utc)
# The operator's messages, and how long after the session's start each
# reply begins: the second comes after time_interval, so the time is
# told again.
REPLIES = [("Open vent 2.", timedelta(0)), ("Status?", timedelta(minutes=45))]


class OpenVent(ToolBase):
    """A vent motor that is stalled: every call fails."""

    name = "OpenVent"
    description = "Open a greenhouse vent."
    input_schema = {
        "type": "object",
        "properties": {"vent": {"type": "integer"}},
        "required": ["vent"],
    }
    is_concurrency_safe = True
    is_read_only = True

    async def check_permissions(self, tool_input, context):  # noqa: D102
        return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="a test tool")

    async def call(self, vent: int, **_kwargs):  # noqa: D102
        return ToolChunk(
            content=[TextBlock(text=f"vent {vent}: motor stalled")],
            state=ToolResultState.ERROR,
        )


class Recorder(MiddlewareBase):
    """Writes each model call as a replay trace's step."""

    def __init__(self, out):
        self.out = out
        self.reply_id = None
        self.seen_hints = set()
        self.hints = []
        source = InjectionConfig(**INJECTION).injection_source
        self.source = source
        self.write({"config": {"agent_name": AGENT, "injection_config": INJECTION,
                               "system_prompt": SYSTEM_PROMPT}})

    def write(self, event):
        self.out.write(json.dumps(event, ensure_ascii=False) + "\n")

    async def on_model_call(self, agent, input_kwargs, next_handler):  # noqa: D102
        state = agent.state
        if state.reply_id != self.reply_id:
            self.reply_id = state.reply_id
            self.write({"reply": {}})
        now = reference.FrozenDatetime.frozen
        self.write({"set_clock": now.isoformat().replace("+00:00", "Z")})
        tokens = await agent.model.count_tokens(
            messages=input_kwargs["messages"], tools=input_kwargs.get("tools"))
        self.write({"tokens": tokens})
        # The hint this step appended: the injection's, not seen before.
        new = None
        context = []
        for msg in state.context:
            dumped = msg.model_dump(mode="json")
            blocks = []
            for block, raw in zip(msg.get_content_blocks(), dumped["content"]):
                fresh = (isinstance(block, HintBlock) and block.source == self.source
                         and block.id not in self.seen_hints)
                if fresh:
                    new = block.hint
                    self.seen_hints.add(block.id)
                else:
                    blocks.append(raw)
            if blocks or not isinstance(dumped["content"], list):
                dumped["content"] = blocks
                context.append(dumped)
        self.write({"context": context})
        self.write({"step": {"cur_iter": state.reply_context.cur_iter, "hint": new}})
        self.hints.append(new)
        return await next_handler(**input_kwargs)


async def session(otlp_url, model_url, trace_out):
    provider = TracerProvider(resource=Resource.create({"service.name": "agentscope"}))
    provider.add_span_processor(SimpleSpanProcessor(
        OTLPSpanExporter(endpoint=otlp_url.rstrip("/") + "/v1/traces", timeout=10)))
    trace.set_tracer_provider(provider)
    model = OpenAIChatModel(
        credential=OpenAICredential(api_key="none", base_url=model_url),
        model="scripted",
        stream=False,
        max_retries=0,
    )
    with open(trace_out, "w", encoding="utf-8") as out:
        recorder = Recorder(out)
        agent = Agent(
            name=AGENT,
            system_prompt=SYSTEM_PROMPT,
            model=model,
            toolkit=Toolkit(tools=[OpenVent()]),
            middlewares=[TracingMiddleware(), recorder],
            injection_config=InjectionConfig(**INJECTION),
        )
        for text, after in REPLIES:
            reference.FrozenDatetime.frozen = START + after
            msg = Msg(name="user", role="user", content=[TextBlock(text=text)])
            async for _ in agent.reply_stream(msg):
                pass
    provider.shutdown()
    return recorder.hints


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    hints = asyncio.run(session(argv[1], argv[2], argv[3]))
    print(json.dumps({"model_calls": len(hints), "hints": hints}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
