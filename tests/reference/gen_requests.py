#!/usr/bin/env python3
"""Generates replay traces for the request differential test
(tests/tests/openai_request.rs, tests/reference/formatter.py).

Usage: ``gen_requests.py SEED SESSIONS STEPS [steady]`` writes one trace
to standard output: SESSIONS sessions (each starts from an empty context with
a ``context`` event) of about STEPS steps, whose events reach every case of
AgentScope's ``OpenAIChatFormatter`` that a text context has: text, empty
text and thinking blocks, string and list hints (with no part, one, or
several), tool calls gathered with text, tool results (string and list
outputs) that cut a message in several, messages with nothing to send,
other agents' and system messages, the compressed summary set and cleared,
system prompts with characters JSON must escape, compressions. With
``steady`` the system prompt and the summary change only where a session
starts, as in an agent's real session (the prompt-cache figures,
docs/openai.md).
"""
import json
import random
import sys

TEXTS = ["", "ok", "Opening vent 2.", 'say "hi"', "back\\slash", "line\nbreak",
         "tab\there", "ctrl\u0001\u001f", "température 23 °C", "emoji 🌱",
         "</system-reminder>", "\u2028sep"]


def text(rng):
    return rng.choice(TEXTS)


def text_block(rng):
    return {"type": "text", "text": text(rng)}


def hint_block(rng):
    if rng.random() < 0.5:
        hint = text(rng)
    else:
        hint = [text_block(rng) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
    block = {"type": "hint", "hint": hint}
    if rng.random() < 0.7:
        block["source"] = rng.choice(["user", "{\"label\": \"System\"}", ""])
    return block


def output(rng):
    if rng.random() < 0.6:
        return text(rng)
    return [text_block(rng) for _ in range(rng.choice([0, 1, 2, 3]))]


class Gen:
    def __init__(self, rng, steady):
        self.rng = rng
        self.calls = 0
        self.steady = steady

    def call_block(self):
        self.calls += 1
        args = self.rng.choice(['{"vent": 2}', "{}", '{"path": "/a b"}', "not json"])
        return {"type": "tool_call", "id": f"c{self.calls}",
                "name": self.rng.choice(["OpenVent", "Read"]), "input": args}

    def result_block(self):
        rng = self.rng
        return {"type": "tool_result", "id": f"c{max(self.calls, 1)}",
                "name": rng.choice(["OpenVent", "Read"]), "output": output(rng),
                "state": rng.choice(["success", "error", "running"])}

    def blocks(self):
        rng = self.rng
        out = []
        for _ in range(rng.choice([0, 1, 2, 3, 4, 5])):
            kind = rng.choice(["text", "text", "thinking", "hint", "call", "call", "result"])
            if kind == "text":
                out.append(text_block(rng))
            elif kind == "thinking":
                out.append({"type": "thinking", "thinking": text(rng)})
            elif kind == "hint":
                out.append(hint_block(rng))
            elif kind == "call":
                out.append(self.call_block())
            else:
                out.append(self.result_block())
        return out

    def event(self):
        rng = self.rng
        r = rng.random()
        if r < 0.12:
            if rng.random() < 0.5:
                return {"user": text(rng)}
            return {"user": {"name": rng.choice(["user", "operator"]), "role": "user",
                             "content": [text_block(rng) for _ in range(rng.choice([0, 1, 2]))]}}
        if r < 0.35:
            return {"assistant": self.blocks()}
        if r < 0.55:
            return {"tool_call": {k: v for k, v in self.call_block().items() if k != "type"}}
        if r < 0.55 and self.calls:
            res = self.result_block()
            return {"tool_result": {"state": res["state"], "output": res["output"]}}
        if r < 0.62:
            role = rng.choice(["assistant", "assistant", "system"])
            if role == "system":
                msg = {"name": "system", "role": "system",
                       "content": [text_block(rng) for _ in range(rng.choice([0, 1, 2]))]}
            else:
                msg = {"name": "Scout", "role": "assistant", "content": self.blocks()}
            return {"message": msg}
        if self.steady and r < 0.70:
            return {"step": {}}
        if r < 0.67:
            return {"summary": rng.choice([None, "", "<system-info>earlier</system-info>",
                                           text(rng)])}
        if r < 0.70:
            return {"config": {"system_prompt": text(rng)}}
        if r < 0.73:
            return {"reply": {}}
        if r < 0.75:
            return {"compress": rng.choice([0, 1, 2, 4])}
        if r < 0.80:
            return {"advance": rng.choice(["30s", "10m", "2h"])}
        if r < 0.83:
            return {"tasks": rng.choice([[], ["pending"], ["in_progress", "pending"]])}
        return {"step": {}}


def main(argv):
    seed, sessions, steps = (int(a) for a in argv[1:4])
    steady = argv[4:5] == ["steady"]
    rng = random.Random(seed)
    out = sys.stdout
    for s in range(sessions):
        gen = Gen(rng, steady)
        injection = rng.choice([{}, {"timezone": "Asia/Shanghai", "time_interval": 0.5},
                                {"inject_runtime_state": False}, {"tool_retries_limit": 3}])
        out.write(json.dumps({"config": {"agent_name": "Rover",
                                         "system_prompt": text(rng),
                                         "injection_config": injection}}) + "\n")
        out.write(json.dumps({"context": []}) + "\n")
        out.write(json.dumps({"summary": None}) + "\n")
        out.write(json.dumps({"set_clock": "2026-07-22T02:00:00Z"}) + "\n")
        out.write(json.dumps({"user": "Start."}) + "\n")
        made = 0
        while made < steps:
            ev = gen.event()
            made += "step" in ev
            out.write(json.dumps(ev) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
