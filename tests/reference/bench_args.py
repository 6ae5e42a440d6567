#!/usr/bin/env python3
"""Times the reference's argument comparison, `json.dumps(json.loads(raw),
sort_keys=True)`, on the texts `core/benches/args.rs` writes.

Usage: ``bench_args.py DIR``; prints one JSON line per ``DIR/*.json``:
``{"name": ..., "bytes": ..., "ns": <median ns per call>}``.
"""
import json
import pathlib
import statistics
import sys
import time


def per_call_ns(raw, budget=0.4):
    """Median over 7 batches, each sized to take about budget/7 seconds."""
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            json.dumps(json.loads(raw), sort_keys=True)
        dt = time.perf_counter() - t
        if dt > budget / 70:
            break
        n *= 4
    n = max(1, int(n * (budget / 7) / dt))
    samples = []
    for _ in range(7):
        t = time.perf_counter_ns()
        for _ in range(n):
            json.dumps(json.loads(raw), sort_keys=True)
        samples.append((time.perf_counter_ns() - t) / n)
    return statistics.median(samples)


def main():
    for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
        raw = path.read_text(encoding="utf-8")
        print(json.dumps({"name": path.stem, "bytes": len(raw.encode()),
                          "ns": per_call_ns(raw)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
