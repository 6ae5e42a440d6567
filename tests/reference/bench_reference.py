#!/usr/bin/env python3
"""Times AgentScope 2.0.11's own ``Agent._inject_runtime_state`` on the
benchmark contexts, for ``cargo xtask bench``.

Usage: ``bench_reference.py FILE...``: each FILE holds one scenario (format
v1), as the core's ``decide`` benchmark writes them. For each, the agent is
built once (``reference.build_agent``) and the injection is run in a loop
on one event loop, with the clock frozen at the scenario's ``now``. The
scenario must not inject (a context that grows would change what is
timed): the run fails if it does. Prints one JSON line per file:
``{"file": ..., "messages": N, "ns": median nanoseconds per decision}``.
"""
import gc
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402  (sets LC_TIME, pins tzdata, patches the clock)

# Each batch runs at least this long; the median of the batches is kept.
BATCH_NS = 40_000_000
BATCHES = 7


def context_shape(agent):
    ctx = agent.state.context
    return len(ctx), len(ctx[-1].content) if ctx else 0


def time_file(path, loop):
    with open(path, "rb") as f:
        scenario = json.loads(f.read())
    agent, now = reference.build_agent(scenario)
    shape = context_shape(agent)
    reference.FrozenDatetime.frozen = now

    def once():
        loop.run_until_complete(reference.run_injection(agent))

    once()
    if context_shape(agent) != shape:
        sys.exit(f"{path}: AgentScope injected; the benchmark context must not")
    # Calibrate the batch size, then time batches with the collector off,
    # as timeit does.
    n = 1
    while True:
        start = time.perf_counter_ns()
        for _ in range(n):
            once()
        elapsed = time.perf_counter_ns() - start
        if elapsed >= BATCH_NS // 4 or n >= 1 << 20:
            break
        n *= 2
    n = max(1, n * BATCH_NS // max(1, elapsed))
    samples = []
    gc.disable()
    try:
        for _ in range(BATCHES):
            start = time.perf_counter_ns()
            for _ in range(n):
                once()
            samples.append((time.perf_counter_ns() - start) / n)
    finally:
        gc.enable()
        reference.FrozenDatetime.frozen = None
    if context_shape(agent) != shape:
        sys.exit(f"{path}: AgentScope injected; the benchmark context must not")
    return {"file": path, "messages": shape[0], "ns": statistics.median(samples)}


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    loop = reference.asyncio.new_event_loop()
    try:
        for path in argv[1:]:
            print(json.dumps(time_file(path, loop)), flush=True)
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
