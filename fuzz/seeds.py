#!/usr/bin/env python3
"""Writes the committed seed corpus (fuzz/corpus/<target>/seed-*) from the
differential test's scenarios: run `cargo test -p envaware-tests` first (it
writes tests/out/scenarios.jsonl), then `python3 fuzz/seeds.py` from the
workspace root. Deterministic for a given scenarios file."""
# Seed corpus: real configurations and tool arguments from the differential
# scenarios (deterministic pick), plus session tails.
import json, random, os, hashlib
random.seed(20260722)
lines = open('tests/out/scenarios.jsonl').read().split('\n')
lines = [l for l in lines if l.strip()]
random.shuffle(lines)
inj, ctx, inputs = [], [], []
for l in lines[:3000]:
    try: s = json.loads(l)
    except Exception: continue
    if not isinstance(s, dict): continue
    ic = s.get('injection_config'); cc = s.get('context_config')
    if isinstance(ic, dict):
        t = json.dumps(ic, ensure_ascii=False)
        if len(t) < 1500 and t not in inj: inj.append(t)
    if isinstance(cc, dict):
        t = json.dumps(cc)
        if t not in ctx: ctx.append(t)
    c = s.get('context')
    if not isinstance(c, list): continue
    for m in c:
        if not isinstance(m, dict) or not isinstance(m.get('content'), list): continue
        for b in m['content']:
            if isinstance(b, dict) and b.get('type') == 'tool_call' and isinstance(b.get('input'), str):
                if len(b['input']) < 400 and b['input'] not in inputs: inputs.append(b['input'])
print(len(inj), len(ctx), len(inputs))
def write(target, items):
    d = f'fuzz/corpus/{target}'
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith('seed-'): os.remove(os.path.join(d, f))
    for data in items:
        h = hashlib.sha1(data).hexdigest()[:16]
        open(os.path.join(d, f'seed-{h}'), 'wb').write(data)
hand = ['{"cmd": "ls", "cwd": "/"}', ' {"cwd":"/","cmd":"ls"}\n', '{"a": 1, "a": 2}', '[1, 2.5, 1e400, -0, NaN]', '"\\ud800"', '{"\\u00e9": "\\ud83d\\ude00"}', 'not json', '\u00a0{"a": 1}', '[' * 34 + ']' * 34, '{}', '']
args = hand + random.sample(inputs, min(24, len(inputs)))
write('args', [a.encode() for a in args])
cfg = [(i, random.choice(ctx) if ctx else '{}') for i in random.sample(inj, min(26, len(inj)))]
cfg += [('{"timezone": "Asia/Shanghai", "extra_fields": {"robot": "greenhouse-rover-7"}}', '{"compression_tool_enabled": true}'),
        ('{"time_format": "%H:%M:%S"}', '{}'), ('{"context_buffer_ratio": 0.9}', '{"trigger_ratio": 0.8}'),
        ('{"inject_runtime_state": "false", "time_interval": "0.5"}', '{"reserve_ratio": 0.9}'),
        ('{"watch": {"temperature": {"change": 2.0, "above": "28", "hysteresis": 0.5}, "door": {"below": "1e1"}}}', '{}'),
        ('{"strict": true, "extra_fields": {"site": "B"}, "watch": {"site": {"change": "-1"}, "tasks": {"above": 1}}}', '{}')]
write('config', [(a + '\0' + b).encode() for a, b in cfg])
eng = []
for a, b in cfg[:30]:
    tail = bytes(random.getrandbits(8) for _ in range(random.randint(16, 400)))
    eng.append((a + '\0' + b + '\0').encode() + tail)
write('engine', eng)
