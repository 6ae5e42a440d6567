#!/usr/bin/env python3
"""Generates scenarios (JSON Lines, docs/scenario-format.md, v1) for
envaware's differential test against AgentScope 2.0.11.

Usage: ``gen_scenarios.py --seed S --count N [--out FILE]``

The output is deterministic for a given seed and count, provided the zone
data is the same: run it with the Python of the venv made from
requirements.txt (tzdata 2025.2); it reads zones only from that package.

Every scenario has a focus (a rule at its edges) on top of a realistic
multi-message conversation; the focus is recorded under the key ``"_focus"``
(unknown keys are ignored by both sides) so that failures can be grouped.
Bounds kept for envaware: argument JSON nested below depth 20 (except the
deep-argument focus, up to 1000 levels), objects and arrays below 30
members. Clocks after 2099 (each zone's final rule, up to year 9999) come
from the ``far_future`` focus.
"""
import argparse
import json
import random
import sys
import zoneinfo
from datetime import datetime, timedelta, timezone

zoneinfo.reset_tzpath(to=[])
ZoneInfo = zoneinfo.ZoneInfo

DEFAULT_SOURCE = '{"label": "System", "sublabel": "Runtime State"}'
DEFAULT_TEMPLATE = (
    "<system-reminder>Treat the following as the ground truth at this point "
    "of the conversation. Anything stated earlier is outdated, and a later "
    "reminder, if any, supersedes this one:\n{runtime_state}\n"
    "</system-reminder>"
)
DEFAULT_FORMAT = "%Y-%m-%dT%H:%M:%S"
DEFAULT_TOOL_HINT = (
    "The last {count} calls to '{tool_name}' with the same arguments all "
    "failed. Stop retrying the same call as-is, check the error message and "
    "try a different approach."
)
TASK_TOOLS = ["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"]
UTC = timezone.utc

DST_ZONES = {
    # zone: other names for the same rules (links in tzdata 2025b)
    "America/New_York": ["US/Eastern", "EST5EDT"],
    "Europe/London": ["GB", "Europe/Belfast"],
    "Australia/Lord_Howe": ["Australia/LHI"],
    "Asia/Shanghai": ["PRC", "Asia/Chongqing"],
    "Pacific/Chatham": ["NZ-CHAT"],
    "America/Sao_Paulo": ["Brazil/East"],
}
OTHER_ZONES = [
    "UTC", "Etc/UTC", "Asia/Tokyo", "Asia/Kolkata", "Asia/Kathmandu",
    "Europe/Berlin", "America/Los_Angeles", "Africa/Casablanca",
    "Pacific/Kiritimati", "Pacific/Pago_Pago", "Etc/GMT+5", "Etc/GMT-14",
    "Factory", "EST5EDT", "Zulu", "GMT0", "Asia/Calcutta", "Europe/Dublin",
    "America/St_Johns", "Antarctica/Troll",
]
INVALID_ZONES = [
    "Mars/Olympus", "utc", "", " ", "America/New York", "/etc/localtime",
    "../UTC", "Asia/Beijing", "EST+5", "UTC+8", "GMT+8", "Europe/london",
    "zone.tab", "America/__init__.py", "UTC/", "+08:00",
]
# The reference crashes on these (a directory; a name too long for the OS).
CRASH_ZONES = ["America", "Etc", "America/Argentina", "a" * 300]

NAMES = ["Friday", "agent", "Jarvis", "coder-2", "Ünï", "助手"]
OTHER_AGENTS = ["Saturday", "planner", "reviewer", "friday"]
TOOLS = ["Bash", "read_file", "web.search", "Edit", "python", "工具",
         "a b", "tool{count}", "{tool_name}", "Grep"]
WORDS = ["alpha", "beta", "gamma", "delta", "path", "cmd", "x", "key",
         "ß", "é", "日本", "😀", "a\"b", "back\\slash", "tab\there", "/x/y"]

TIME_FORMATS = [
    DEFAULT_FORMAT,
    "%Y-%m-%dT%H:%M:%S%z",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S.%f%z",
    "%a %b %d %I:%M:%S %p %Y",
    "%A, %B %d, %Y %I:%M %p",
    "%Y-%j %H:%M",
    "%d/%m/%y %H:%M",
    "%y%m%d%H%M%S",
    "Date: %Y/%m/%d Time: %H.%M",
    "%Y-%m-%d  %H:%M",
    "%Y-%m-%d %H:%M:%S %z",
    "%e %b %Y %H:%M",
    "%c",
    "%Y-%m-%d %%H %H:%M",
    "%Y-%m-%d\n%H:%M:%S",
    "%H:%M:%S",  # no date part: a known deliberate difference
    "%H:%M",     # idem
]


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.call_no = 0
        self._transitions = {}
        # Set while a focus runs with its clock past 2099 (f_far_future).
        self._far = False

    # ------------------------------------------------------------------
    # small helpers
    # ------------------------------------------------------------------
    def chance(self, p):
        return self.r.random() < p

    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def new_id(self, prefix="call_"):
        self.call_no += 1
        return f"{prefix}{self.call_no}"

    def rand_now(self):
        if self._far:
            return self.far_now()
        year = self.r.choice([2024, 2025, 2026, 2026, 2027, 2030, 2035,
                              2001, 2068, 2069, 2098])
        base = datetime(year, 1, 1, tzinfo=UTC)
        secs = self.r.randrange(365 * 86400)
        micro = 0 if self.chance(0.6) else self.r.randrange(1_000_000)
        return base + timedelta(seconds=secs, microseconds=micro)

    @staticmethod
    def iso(dt):
        return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") \
            if dt.microsecond else dt.astimezone(UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ")

    def iso_any_offset(self, dt):
        """`now` with a random (valid) offset instead of Z, sometimes."""
        if self.chance(0.7):
            return self.iso(dt)
        off = timedelta(minutes=self.r.choice([0, 330, -300, 480, 765, -90]))
        local = dt.astimezone(timezone(off))
        return local.isoformat()

    @staticmethod
    def zone(name):
        try:
            return ZoneInfo(name)
        except Exception:  # noqa: BLE001 - invalid names fall back to UTC
            return UTC

    def render(self, instant, zone_name, fmt):
        return instant.astimezone(self.zone(zone_name)).strftime(fmt)

    def text(self, n=None):
        n = n or self.r.randint(1, 8)
        return " ".join(self.pick(WORDS) for _ in range(n))

    # ------------------------------------------------------------------
    # blocks and messages
    # ------------------------------------------------------------------
    @staticmethod
    def txt(t):
        return {"type": "text", "text": t}

    @staticmethod
    def hint_block(hint, source=DEFAULT_SOURCE):
        return {"type": "hint", "source": source, "hint": hint}

    @staticmethod
    def call(cid, name, raw):
        return {"type": "tool_call", "id": cid, "name": name, "input": raw}

    @staticmethod
    def result(cid, name, state, output="done"):
        return {"type": "tool_result", "id": cid, "name": name,
                "output": output, "state": state}

    def data_block(self):
        if self.chance(0.5):
            return {"type": "data", "source": {
                "type": "url", "url": "https://example.com/a.png",
                "media_type": "image/png"}}
        return {"type": "data", "source": {
            "type": "base64", "data": "iVBORw0KGgo=",
            "media_type": "image/png"}}

    @staticmethod
    def msg(name, role, content):
        return {"name": name, "role": role, "content": content}

    def user(self, t=None):
        content = [self.txt(t or self.text())]
        if self.chance(0.05):
            content.append(self.data_block())
        return self.msg("user", "user", content)

    def injection(self, fields, template=DEFAULT_TEMPLATE, extra=None):
        """The text AgentScope writes for these fields (an ordered list of
        (key, value)); `extra` updates them the way `dict.update` does."""
        d = dict(fields)
        if extra:
            d.update(extra)
        return template.replace(
            "{runtime_state}", "\n".join(f"<{k}>{v}</{k}>"
                                         for k, v in d.items()))

    def success_pair(self, name=None):
        name = name or self.pick(TOOLS)
        cid = self.new_id()
        return [self.call(cid, name, dumps({"q": self.text(2)})),
                self.result(cid, name, "success", self.text(3))]

    def agent_turn(self, agent, hint=None, tools=0, task_call=None):
        content = []
        if hint is not None:
            content.append(hint)
        if self.chance(0.3):
            content.append({"type": "thinking", "thinking": self.text()})
        content.append(self.txt(self.text()))
        for _ in range(tools):
            content.extend(self.success_pair())
        if task_call:
            cid = self.new_id()
            content.append(self.call(cid, task_call, '{"subject": "x"}'))
            content.append(self.result(cid, task_call, "success"))
        return self.msg(agent, "assistant", content)

    def background(self, agent, turns=None):
        """Older conversation without any runtime-state injection."""
        msgs = []
        for _ in range(self.r.randint(0, 3) if turns is None else turns):
            if self.chance(0.1):
                msgs.append(self.msg("system", "system",
                                     [self.txt("be brief")]))
            msgs.append(self.user())
            who = agent if self.chance(0.85) else self.pick(OTHER_AGENTS)
            msgs.append(self.agent_turn(who, tools=self.r.randint(0, 2)))
        return msgs

    # ------------------------------------------------------------------
    # scenario skeleton
    # ------------------------------------------------------------------
    def base(self, focus):
        agent = self.pick(NAMES) if self.chance(0.4) else "Friday"
        now = self.rand_now()
        sc = {"_focus": focus, "agent_name": agent,
              "now": self.iso_any_offset(now),
              "injection_config": {}, "context_config": {},
              "context_size": 128000, "input_tokens": 0, "cur_iter": 0,
              "tasks": [], "context": []}
        if self.chance(0.5):
            sc["input_tokens"] = self.r.randrange(0, 60000)
        if self.chance(0.2):
            sc["cur_iter"] = self.r.randint(1, 6)
        return sc, agent, now

    def finish(self, sc):
        # Omit defaults sometimes, so that both sides apply them.
        for key, default in (("injection_config", {}), ("context_config", {}),
                             ("tasks", []), ("context_size", 128000),
                             ("input_tokens", 0), ("cur_iter", 0),
                             ("context", [])):
            if sc.get(key) == default and self.chance(0.5):
                del sc[key]
        if sc.get("agent_name") == "agent" and self.chance(0.5):
            del sc["agent_name"]
        return sc

    def rand_tasks(self, p_any=0.3):
        if not self.chance(p_any):
            return []
        tasks = []
        for _ in range(self.r.randint(1, 5)):
            st = self.pick(["pending", "in_progress", "completed",
                            "completed", None])
            t = {"subject": self.text(2)}
            if st is not None:
                t["state"] = st
            tasks.append(t)
        return tasks

    def time_fields(self, instant, zone_name, fmt=DEFAULT_FORMAT,
                    tz_tag=True):
        f = [("current-time", self.render(instant, zone_name, fmt))]
        if tz_tag:
            f.append(("timezone", zone_name))
        return f

    # ------------------------------------------------------------------
    # focus: time interval edges
    # ------------------------------------------------------------------
    def f_time_interval(self):
        sc, agent, now = self.base("time_interval")
        inj = sc["injection_config"]
        interval = self.pick([0.5, 0.5, 1, 0, 0.25, 0.1, 1 / 3, 2.5, 24,
                              0.0001, 1e-9, 0.7, 10])
        if interval != 0.5 or self.chance(0.3):
            inj["time_interval"] = interval
        zone = self.pick(["UTC", "Asia/Shanghai", "America/New_York",
                          "Asia/Kolkata", "Europe/Berlin"])
        if zone != "UTC" or self.chance(0.3):
            inj["timezone"] = zone
        fmt = self.pick([DEFAULT_FORMAT, DEFAULT_FORMAT,
                         "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S.%f%z",
                         "%Y-%m-%dT%H:%M:%S%z"])
        if fmt != DEFAULT_FORMAT:
            inj["time_format"] = fmt
        if "%f" not in fmt and self.chance(0.7):
            now = now.replace(microsecond=0)
            sc["now"] = self.iso(now)
        exact = int(interval * 3600 * 1_000_000)
        kind = self.r.randrange(8)
        if kind == 0:
            delta = exact
        elif kind == 1:
            delta = exact + self.pick([-1, 1, -2, 2])
        elif kind == 2:
            delta = exact + self.pick([-1, 1]) * 1_000_000
        elif kind == 3:
            delta = 0
        elif kind == 4:
            delta = -self.pick([1, 1_000_000, 3600_000_000])  # future
        elif kind == 5:
            delta = self.r.randrange(0, max(1, 2 * exact + 7200_000_000))
        elif kind == 6:
            delta = self.pick([86400, 365 * 86400, 30 * 86400]) * 1_000_000
        else:
            delta = exact + self.r.randrange(-1_000_000, 1_000_000)
        recorded = now - timedelta(microseconds=delta)
        sc["_case"] = ["exact", "exact+-1us", "exact+-1s", "zero", "future",
                       "random", "days", "exact+-<1s"][kind]
        fields = self.time_fields(recorded, zone, fmt)
        sc["context"] = self.background(agent) + [self.user()]
        hint = self.hint_block(self.injection(fields))
        turn = self.agent_turn(agent, hint, tools=self.r.randint(0, 2))
        sc["context"].insert(max(0, len(sc["context"]) - 1), turn)
        if self.chance(0.3):
            # mid-reply: the agent's message is last
            sc["context"] = sc["context"][:-1]
            sc["cur_iter"] = self.r.randint(1, 4)
        if self.chance(0.2):
            # and an older, different recorded time further up
            old = self.hint_block(self.injection(self.time_fields(
                recorded - timedelta(hours=3), zone, fmt)))
            sc["context"].insert(0, self.agent_turn(agent, old))
        sc["tasks"] = self.rand_tasks(0.15)
        return sc

    def f_first_reply(self):
        sc, agent, now = self.base("first_reply")
        sc["context"] = self.background(agent) + [self.user()]
        if self.chance(0.3):
            sc["injection_config"]["timezone"] = self.pick(
                list(DST_ZONES) + OTHER_ZONES)
        if self.chance(0.2):
            # an injection without time (tasks only) does not count
            sc["context"].insert(0, self.agent_turn(agent, self.hint_block(
                self.injection([("tasks", "You have 1 in-progress tasks and "
                                 "0 pending tasks.")]))))
        if self.chance(0.3):
            sc["context"] = []
        sc["tasks"] = self.rand_tasks()
        return sc

    # ------------------------------------------------------------------
    # focus: DST and zones
    # ------------------------------------------------------------------
    def transitions(self, zone_name, year):
        key = (zone_name, year)
        if key not in self._transitions:
            z = ZoneInfo(zone_name)
            out = []
            t = datetime(year, 1, 1, tzinfo=UTC)
            end = datetime(year + 1, 1, 1, tzinfo=UTC) if year < 9999 \
                else datetime(9999, 12, 31, tzinfo=UTC)
            prev = t.astimezone(z).utcoffset()
            while t < end:
                n = t + timedelta(hours=1)
                off = n.astimezone(z).utcoffset()
                if off != prev:
                    lo, hi = t, n
                    while hi - lo > timedelta(minutes=1):
                        mid = lo + (hi - lo) / 2
                        mid = mid.replace(second=0, microsecond=0)
                        if mid <= lo:
                            break
                        if mid.astimezone(z).utcoffset() == prev:
                            lo = mid
                        else:
                            hi = mid
                    out.append(hi)
                    prev = off
                t = n
            self._transitions[key] = out
        return self._transitions[key]

    def f_dst(self):
        sc, agent, _ = self.base("dst")
        zone = self.pick(list(DST_ZONES))
        year = self.pick([2024, 2025, 2026, 2027, 2030]
                         if zone != "America/Sao_Paulo"
                         else [2015, 2016, 2017, 2018, 2026])
        trans = self.transitions(zone, year)
        if trans:
            t = self.pick(trans)
        else:
            t = datetime(year, self.r.randint(1, 12), 5, tzinfo=UTC)
        now = t + timedelta(minutes=self.r.randint(-150, 150),
                            seconds=self.pick([0, 0, 0, 30]))
        return self.dst_case(sc, agent, t, now, [zone] + DST_ZONES[zone])

    def dst_case(self, sc, agent, t, now, names,
                 formats=("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M")):
        """A recorded time around a DST change `t` in zone `names[0]`, read
        back at `now` under one of its names."""
        inj = sc["injection_config"]
        sc["now"] = self.iso(now)
        interval = self.pick([0.5, 1, 0.25, 2, 1.5, 0.75, 0])
        inj["time_interval"] = interval
        zone = names[0]
        cfg = self.pick(names) if self.chance(0.3) else zone
        inj["timezone"] = cfg
        rec_zone = self.r.choice([cfg, cfg, self.pick(names),
                                  self.pick(OTHER_ZONES)])
        sc["_case"] = "same name" if rec_zone == cfg else (
            "alias" if rec_zone in names else "other zone")
        # an elapsed time around the interval, or around interval +- the
        # DST shift, so that wall-clock arithmetic decides
        shift = self.pick([0, 0, 3600, -3600, 1800, -1800, 2700])
        delta = int(interval * 3600) + shift + self.pick(
            [0, 0, 1, -1, 60, -60, self.r.randint(-3600, 3600)])
        recorded = now - timedelta(seconds=delta)
        fmt = DEFAULT_FORMAT
        if self.chance(0.2):
            fmt = self.pick(formats)
            inj["time_format"] = fmt
        fields = self.time_fields(recorded, rec_zone, fmt,
                                  tz_tag=self.chance(0.9))
        if self.chance(0.15):
            # a wall time written by hand: maybe in a gap or a fold
            local = t.astimezone(self.zone(rec_zone))
            wall = local.replace(tzinfo=None) + timedelta(
                minutes=self.pick([-30, -15, 0, 15, 30, 45]))
            fields[0] = ("current-time", wall.strftime(DEFAULT_FORMAT))
            if fmt != DEFAULT_FORMAT:
                inj["time_format"] = DEFAULT_FORMAT
        sc["context"] = self.background(agent, self.r.randint(0, 2))
        sc["context"].append(self.agent_turn(
            agent, self.hint_block(self.injection(fields)), tools=1))
        if self.chance(0.6):
            sc["context"].append(self.user())
        else:
            sc["cur_iter"] = 1
        return sc

    # ------------------------------------------------------------------
    # focus: clocks past 2099, where zoneinfo applies each zone's final rule
    # ------------------------------------------------------------------
    FAR_ZONES = {
        # zone: other names for the same rules; negative DST (Dublin), a
        # two-hour change (Troll), changes at 24:00 or later (Santiago,
        # Jerusalem, Cairo), half-hour DST (Lord Howe), none (Sao Paulo)
        "Europe/Dublin": ["Eire"],
        "Antarctica/Troll": [],
        "America/Santiago": ["Chile/Continental"],
        "Asia/Jerusalem": ["Israel", "Asia/Tel_Aviv"],
        "Africa/Cairo": ["Egypt"],
        "America/New_York": ["US/Eastern", "EST5EDT"],
        "America/Sao_Paulo": ["Brazil/East"],
        "Australia/Lord_Howe": ["Australia/LHI"],
        "America/Nuuk": ["America/Godthab"],
        "Pacific/Chatham": ["NZ-CHAT"],
    }

    def far_year(self):
        return self.pick([2100, 2100, 2101, 2399, 2400, 9999, 9999,
                          self.r.randint(2100, 9998)])

    def far_now(self, year=None):
        year = year or self.far_year()
        base = datetime(year, 1, 1, tzinfo=UTC)
        # Python's datetime ends at 9999-12-31: keep a day for the offsets.
        secs = self.r.randrange((364 if year == 9999 else 365) * 86400)
        micro = 0 if self.chance(0.6) else self.r.randrange(1_000_000)
        return base + timedelta(seconds=secs, microseconds=micro)

    def f_far_future(self):
        kind = self.r.randrange(6)
        if kind >= 3:
            # Other foci with their clock in 2100..9999.
            self._far = True
            try:
                sc = self.pick([self.f_time_interval, self.f_time_interval,
                                self.f_formats, self.f_zones])()
            finally:
                self._far = False
            sc["_focus"] = "far_future/" + sc["_focus"]
            return sc
        sc, agent, _ = self.base("far_future")
        zone = self.pick(list(self.FAR_ZONES))
        year = self.far_year()
        trans = [t for t in self.transitions(zone, year)
                 if t < datetime(9999, 12, 30, tzinfo=UTC)]
        t = self.pick(trans) if trans else self.far_now(year)
        now = t + timedelta(minutes=self.r.randint(-150, 150),
                            seconds=self.pick([0, 0, 0, 30]))
        return self.dst_case(sc, agent, t, now, [zone] + self.FAR_ZONES[zone],
                             ("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M",
                              "%Y-%m-%d %H:%M:%S %Z"))

    def f_zones(self):
        sc, agent, now = self.base("zones")
        inj = sc["injection_config"]
        kind = self.r.randrange(5)
        sc["_case"] = ["invalid cfg", "invalid rec", "invalid both",
                       "valid", "valid"][kind]
        cfg = self.pick(OTHER_ZONES + list(DST_ZONES))
        rec = self.pick(OTHER_ZONES + list(DST_ZONES))
        if kind == 0:
            cfg = self.pick(INVALID_ZONES)
        elif kind == 1:
            rec = self.pick(INVALID_ZONES)
        elif kind == 2:
            cfg = self.pick(INVALID_ZONES)
            rec = cfg
        inj["timezone"] = cfg
        inj["time_interval"] = self.pick([0.5, 1, 8, 24])
        delta = self.r.randint(-3 * 3600, 20 * 3600)
        recorded = now - timedelta(seconds=delta)
        tag = rec
        if self.chance(0.2):
            tag = self.pick([f" {rec} ", f"\t{rec}", f"{rec}\u3000"])
        fields = [("current-time", self.render(recorded, rec,
                                               DEFAULT_FORMAT)),
                  ("timezone", tag)]
        if self.chance(0.1):
            fields = [("current-time", fields[0][1]),
                      ("timezone", rec + "\n")]
        sc["context"] = self.background(agent) + [
            self.agent_turn(agent, self.hint_block(self.injection(fields))),
            self.user()]
        return sc

    def f_crash(self):
        sc, agent, now = self.base("crash")
        z = self.pick(CRASH_ZONES)
        if self.chance(0.5):
            sc["injection_config"]["timezone"] = z
        else:
            fields = [("current-time", self.render(now, "UTC",
                                                   DEFAULT_FORMAT)),
                      ("timezone", z)]
            sc["context"] = [self.agent_turn(
                agent, self.hint_block(self.injection(fields)))]
        return sc

    # ------------------------------------------------------------------
    # focus: time formats and lenient parsing
    # ------------------------------------------------------------------
    def lenient_variants(self, recorded, fmt):
        """Texts strptime may accept for `fmt` besides the exact one."""
        y, mo, d = recorded.year, recorded.month, recorded.day
        h, mi, s = recorded.hour, recorded.minute, recorded.second
        out = []
        if fmt == DEFAULT_FORMAT:
            out += [f"{y}-{mo}-{d}T{h}:{mi}:{s}",
                    f"{y:04d}-{mo:02d}-{d:02d}t{h:02d}:{mi:02d}:{s:02d}",
                    "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c
                            for c in recorded.strftime(fmt)),
                    "".join(chr(ord(c) + 0x0630) if c.isdigit() else c
                            for c in recorded.strftime(fmt)),
                    f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:60",
                    f"{y:04d}-02-30T{h:02d}:{mi:02d}:{s:02d}",
                    f"{y:04d}-{mo:02d}-{d:02d}T24:00:00",
                    f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.5",
                    f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}",
                    "0001-01-01T00:00:00", "9999-12-31T23:59:59",
                    "0000-01-01T00:00:00", "garbage", "",
                    " \u00a0" + recorded.strftime(fmt) + "\u3000",
                    "\x1c" + recorded.strftime(fmt)]
        elif fmt.endswith("%z"):
            base = recorded.strftime(fmt[:-2])
            out += [base + "Z", base + "+00:00", base + "+08:00:30",
                    base + "+2400", base + "-0000", base + "+05:30",
                    base + "+08:00:30.123456", base + "z"]
        elif "%a" in fmt or "%A" in fmt or "%b" in fmt:
            t = recorded.strftime(fmt)
            wrong = {"Mon": "Tue", "Tue": "Wed", "Wed": "Thu", "Thu": "Fri",
                     "Fri": "Sat", "Sat": "Sun", "Sun": "Mon"}
            for a, b in wrong.items():
                if a in t:
                    out.append(t.replace(a, b, 1))
                    break
            out += [t.lower(), t.upper(), t.replace(" ", "  ")]
        elif " " in fmt:
            t = recorded.strftime(fmt)
            out += [t.replace(" ", "   "), t.replace(" ", "\u2003"),
                    t.replace(" ", "\t"), t.replace(" ", "\x1c"),
                    t.replace(" ", "")]
        elif "%y" in fmt:
            t = recorded.strftime(fmt)
            out += [t, "690101" + t[6:], "680101" + t[6:]]
        return out

    def f_formats(self):
        sc, agent, now = self.base("formats")
        inj = sc["injection_config"]
        fmt = self.pick(TIME_FORMATS)
        inj["time_format"] = fmt
        zone = self.pick(["UTC", "Asia/Shanghai", "America/New_York",
                          "Asia/Kolkata"])
        inj["timezone"] = zone
        inj["time_interval"] = self.pick([0.5, 1, 12, 48, 2000])
        recorded = now - timedelta(seconds=self.r.randint(-600, 10 * 3600))
        text = self.render(recorded, zone, fmt)
        sc["_case"] = f"fmt {fmt!r}"
        if self.chance(0.45):
            variants = self.lenient_variants(
                recorded.astimezone(self.zone(zone)), fmt)
            if variants:
                text = self.pick(variants)
                sc["_case"] += " lenient"
        if self.chance(0.1):
            # the recorded text was written under another format
            text = self.render(recorded, zone, self.pick(TIME_FORMATS))
        fields = [("current-time", text), ("timezone", zone)]
        sc["context"] = self.background(agent) + [
            self.agent_turn(agent, self.hint_block(self.injection(fields))),
            self.user()]
        return sc

    # ------------------------------------------------------------------
    # focus: which hints are detected
    # ------------------------------------------------------------------
    def f_detection(self):
        sc, agent, now = self.base("detection")
        inj = sc["injection_config"]
        zone = "UTC"
        if self.chance(0.3):
            inj["injection_source"] = self.pick(
                ["custom", "", '{"label": "System"}', DEFAULT_SOURCE + " "])
        source = inj.get("injection_source", DEFAULT_SOURCE)
        inj["time_interval"] = 1
        recent = now - timedelta(minutes=self.r.randint(0, 50))
        fields = self.time_fields(recent, zone)
        text = self.injection(fields)
        msgs = self.background(agent)
        kind = self.r.randrange(12)
        sc["_case"] = f"kind{kind}"
        if kind == 0:  # a different source
            blk = self.hint_block(text, self.pick(
                ["other", None, "System", DEFAULT_SOURCE.replace(" ", "")]))
            msgs.append(self.agent_turn(agent, blk))
        elif kind == 1:  # split over text parts (joined with "")
            cut = self.r.randint(1, len(text) - 1)
            i = text.find("<current-time>")
            if i >= 0 and self.chance(0.6):
                cut = i + self.r.randint(1, len("<current-time>") - 1)
            parts = [self.txt(text[:cut])]
            if self.chance(0.5):
                parts.append(self.data_block())
            parts.append(self.txt(text[cut:]))
            msgs.append(self.agent_turn(agent, self.hint_block(parts,
                                                               source)))
        elif kind == 2:  # in a user message's text: ignored
            msgs.append(self.user(text))
        elif kind == 3:  # as a hint block in a user message: invalid Msg
            msgs.append(self.msg("user", "user", [self.hint_block(text,
                                                                  source)]))
        elif kind == 4:  # system message text
            msgs.append(self.msg("system", "system", [self.txt(text)]))
        elif kind == 5:  # another agent's assistant message counts
            msgs.append(self.agent_turn(self.pick(OTHER_AGENTS),
                                        self.hint_block(text, source)))
        elif kind == 6:  # regex does not cross a newline
            t = self.render(recent, zone, DEFAULT_FORMAT)
            bad = self.pick([f"<current-time>{t}\n</current-time>",
                             f"<current-time>\n{t}</current-time>",
                             f"<current-time>{t}</current-time>"
                             "\n<timezone>\nAsia/Tokyo</timezone>",
                             f"<current-time> {t} </current-time>",
                             f"<current-time>{t}",
                             f"<current-time><current-time>{t}"
                             "</current-time>"])
            msgs.append(self.agent_turn(agent, self.hint_block(
                DEFAULT_TEMPLATE.replace("{runtime_state}", bad), source)))
        elif kind == 7:  # newest hint without time, older with
            old = now - timedelta(minutes=self.pick([10, 90]))
            msgs.append(self.agent_turn(agent, self.hint_block(
                self.injection(self.time_fields(old, zone)), source)))
            msgs.append(self.user())
            msgs.append(self.agent_turn(agent, self.hint_block(
                self.injection([("context-length", "Your current context "
                                 "contains 1 tokens.")]), source)))
        elif kind == 8:  # newest time is old, an older one is recent
            msgs.append(self.agent_turn(agent, self.hint_block(text, source)))
            stale = now - timedelta(hours=5)
            msgs.append(self.agent_turn(agent, self.hint_block(
                self.injection(self.time_fields(stale, zone)), source)))
        elif kind == 9:  # several hints in one message, order matters
            stale = now - timedelta(hours=5)
            blocks = [self.hint_block(text, source),
                      self.hint_block(self.injection(
                          self.time_fields(stale, zone)), source)]
            self.r.shuffle(blocks)
            msgs.append(self.msg(agent, "assistant",
                                 blocks + [self.txt("ok")]))
        elif kind == 10:  # hint list with only data / empty list
            msgs.append(self.agent_turn(agent, self.hint_block(
                self.pick([[self.data_block()], []]), source)))
            msgs.append(self.agent_turn(agent, self.hint_block(text, source)))
        else:  # hint mentioned in a thinking/text block only
            msgs.append(self.msg(agent, "assistant",
                                 [{"type": "thinking", "thinking": text},
                                  self.txt(text)]))
        if self.chance(0.7):
            msgs.append(self.user())
        sc["context"] = msgs
        sc["tasks"] = self.rand_tasks(0.2)
        return sc

    # ------------------------------------------------------------------
    # focus: extra fields
    # ------------------------------------------------------------------
    def f_extra(self):
        sc, agent, now = self.base("extra_fields")
        inj = sc["injection_config"]
        keys = ["location", "user", "timezone", "tasks", "current-time",
                "context-length", "tool-error", "", "a b", "x<y>"]
        values = ["Beijing", "", "multi\nline", "<current-time>2020-01-01"
                  "T00:00:00</current-time>", "<tasks>", "{runtime_state}",
                  "Asia/Tokyo", "<current-time>garbage", "ü"]
        extra = {}
        for _ in range(self.r.randint(1, 4)):
            extra[self.pick(keys)] = self.pick(values)
        inj["extra_fields"] = extra
        inj["time_interval"] = self.pick([0.5, 1000])
        zone = "UTC"
        # the previous step's injection, written with the same extras
        prev = [("current-time", self.render(
            now - timedelta(minutes=self.r.randint(0, 90)), zone,
            DEFAULT_FORMAT)), ("timezone", zone)]
        if self.chance(0.4):
            prev = [("tasks", "You have 0 in-progress tasks and 1 pending "
                     "tasks. Use `TaskList` to view them if you don't know.")]
        msgs = self.background(agent)
        if self.chance(0.8):
            msgs.append(self.agent_turn(agent, self.hint_block(
                self.injection(prev, extra=extra))))
        msgs.append(self.user())
        sc["context"] = msgs
        sc["tasks"] = self.rand_tasks(0.5)
        if self.chance(0.3):
            sc["input_tokens"] = 120000
        return sc

    # ------------------------------------------------------------------
    # focus: tasks
    # ------------------------------------------------------------------
    def f_tasks(self):
        sc, agent, now = self.base("tasks")
        inj = sc["injection_config"]
        sc["tasks"] = self.rand_tasks(0.95)
        names = TASK_TOOLS
        if self.chance(0.25):
            names = self.pick([["todo_write"], [], ["TaskList", "Plan"],
                               ["Bash"]])
            inj["task_tool_names"] = names
        recent = now - timedelta(minutes=5)
        msgs = self.background(agent)
        kind = self.r.randrange(6)
        if kind == 0 and names:
            msgs.append(self.agent_turn(agent, task_call=self.pick(names)))
        elif kind == 1:
            msgs.append(self.agent_turn(
                self.pick(OTHER_AGENTS), task_call=self.pick(TASK_TOOLS)))
        elif kind == 2:
            msgs.append(self.agent_turn(agent, self.hint_block(
                self.injection(self.time_fields(recent, "UTC") + [
                    ("tasks", "You have 1 in-progress tasks and 2 pending "
                     "tasks. Use `TaskList` to view them if you don't "
                     "know.")]))))
        elif kind == 3:
            msgs.append(self.agent_turn(agent, self.hint_block(
                self.injection(self.time_fields(recent, "UTC")))))
        elif kind == 4:
            msgs.append(self.agent_turn(agent, task_call="Bash"))
        if self.chance(0.6):
            msgs.append(self.user())
        sc["context"] = msgs
        return sc

    # ------------------------------------------------------------------
    # focus: context length
    # ------------------------------------------------------------------
    def f_context(self):
        sc, agent, now = self.base("context_length")
        cc = sc["context_config"]
        inj = sc["injection_config"]
        size = self.pick([8192, 32000, 128000, 128000, 200000, 1_000_000, 0,
                          1, 3, 2 ** 53 + 1, 2 ** 54, 10 ** 15 + 7,
                          2 ** 62])
        sc["context_size"] = size
        trig = self.pick([0.8, 0.8, 0.5, 0.9, 0.7, 0.33, 0.6, 0.85, 0.15])
        buf = self.pick([0.2, 0.2, 0.0, 0.1, 0.05, 0.3, 0.25, 0.01, 0.1])
        if buf >= trig:
            buf = round(trig / 2, 3)
        if trig != 0.8 or self.chance(0.3):
            cc["trigger_ratio"] = trig
        if trig <= 0.1:
            cc["reserve_ratio"] = 0.05
        if self.chance(0.15):
            inj["context_buffer_ratio"] = buf
            if self.chance(0.5):
                cc["context_buffer_ratio"] = self.pick([0.95, 0.1, 0.3])
        elif buf != 0.2 or self.chance(0.3):
            cc["context_buffer_ratio"] = buf
        if self.chance(0.4):
            cc["compression_tool_enabled"] = self.pick([True, False])
        threshold = (trig - buf) * size
        k = self.r.randrange(6)
        sc["_case"] = ["floor", "floor+1", "near", "special", "random",
                       "random"][k]
        if k == 0:
            tokens = int(threshold)
        elif k == 1:
            tokens = int(threshold) + 1
        elif k == 2:
            tokens = max(0, int(threshold) + self.pick([-2, -1, 2, 3]))
        elif k == 3:
            tokens = self.pick([0, 2 ** 53, 2 ** 53 + 1, 2 ** 63 - 1,
                                10 ** 18])
        else:
            tokens = self.r.randrange(0, max(2, 2 * size))
        sc["input_tokens"] = min(tokens, 2 ** 63 - 1)
        sc["cur_iter"] = self.pick([0, 0, 0, 1, 2])
        sc["tasks"] = self.rand_tasks(0.5)
        recent = now - timedelta(minutes=self.r.randint(0, 29))
        msgs = self.background(agent)
        msgs.append(self.agent_turn(agent, self.hint_block(
            self.injection(self.time_fields(recent, "UTC"))),
            task_call="TaskList" if self.chance(0.5) else None))
        msgs.append(self.user())
        sc["context"] = msgs
        return sc

    # ------------------------------------------------------------------
    # focus: repeated tool errors
    # ------------------------------------------------------------------
    def json_value(self, depth=0, max_depth=4):
        r = self.r
        kinds = ["int", "float", "str", "bool", "null"]
        if depth < max_depth:
            kinds += ["obj", "arr", "obj"]
        k = self.pick(kinds)
        if k == "int":
            return r.choice([0, 1, -1, 42, 2 ** 53 + 1, 10 ** 30,
                             r.randint(-1000, 1000)])
        if k == "float":
            return r.choice([1.0, 0.5, -0.0, 0.0, 1e22, 1.5e-7, 0.1,
                             r.random() * 100])
        if k == "str":
            return self.text(r.randint(1, 3))
        if k == "bool":
            return r.choice([True, False])
        if k == "null":
            return None
        if k == "arr":
            return [self.json_value(depth + 1, max_depth)
                    for _ in range(r.randint(0, 4))]
        return {self.pick(WORDS) + str(r.randint(0, 3)):
                self.json_value(depth + 1, max_depth)
                for _ in range(r.randint(0, 5))}

    def enc_str(self, s, mode):
        out = ['"']
        for ch in s:
            o = ord(ch)
            if ch == '"':
                out.append('\\"')
            elif ch == "\\":
                out.append("\\\\")
            elif o < 0x20:
                out.append(self.pick(["\\u%04x" % o, "\\u%04X" % o])
                           if ch not in "\n\t" or mode == "esc"
                           else {"\n": "\\n", "\t": "\\t"}[ch])
            elif ch == "/" and mode == "esc":
                out.append("\\/")
            elif o > 0x7F and mode == "esc":
                if o > 0xFFFF:
                    v = o - 0x10000
                    out.append("\\u%04x\\u%04x" % (0xD800 + (v >> 10),
                                                   0xDC00 + (v & 0x3FF)))
                else:
                    out.append(self.pick(["\\u%04x", "\\u%04X"]) % o)
            elif mode == "esc" and ch.isalpha() and self.chance(0.2):
                out.append("\\u%04x" % o)
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)

    def enc(self, v, style):
        """Serializes `v` with formatting choices that keep its value."""
        ws = style["ws"]
        if isinstance(v, bool) or v is None:
            return json.dumps(v)
        if isinstance(v, int):
            if v == 0 and style["negzero"]:
                return "-0"
            return str(v)
        if isinstance(v, float):
            if style["floatfmt"] and v == 1.0:
                return self.pick(["1.0", "1.00", "1e0", "10e-1", "0.1e1"])
            return repr(v)
        if isinstance(v, str):
            return self.enc_str(v, style["str"])
        if isinstance(v, list):
            return "[" + ("," + ws).join(self.enc(x, style) for x in v) + "]"
        items = list(v.items())
        if style["shuffle"]:
            self.r.shuffle(items)
        parts = []
        for k, x in items:
            if style["dup"] and self.chance(0.3):
                parts.append(self.enc_str(k, "raw") + ":" + ws + "0")
            parts.append(self.enc_str(k, style["str"]) + ":" + ws
                         + self.enc(x, style))
        return "{" + ("," + ws).join(parts) + "}"

    def rand_style(self):
        return {"ws": self.pick(["", " ", "  ", "\n", " \t"]),
                "shuffle": self.chance(0.5), "dup": self.chance(0.1),
                "str": self.pick(["raw", "raw", "esc"]),
                "negzero": self.chance(0.1), "floatfmt": self.chance(0.3)}

    def perturb(self, v):
        """A value that is often, not always, different."""
        r = self.r
        if isinstance(v, dict) and v:
            k = self.pick(list(v))
            w = dict(v)
            w[k] = self.perturb(v[k])
            return w
        if isinstance(v, list) and v:
            w = list(v)
            i = r.randrange(len(w))
            w[i] = self.perturb(w[i])
            return w
        if isinstance(v, bool):
            return not v
        if isinstance(v, int):
            return r.choice([float(v), v + 1, -v])
        if isinstance(v, float):
            return r.choice([-v, v + 1, int(v) if v == v and abs(v) < 1e300
                             else 0])
        if isinstance(v, str):
            return v + "!"
        return 0

    def raw_variant(self, v, base_raw):
        """Raw argument text for value `v`; sometimes an odd one."""
        k = self.r.randrange(30)
        if k == 0:
            return self.pick(["\u00a0", " \n", "\x1c", "\u3000", "\t",
                              "\x85", "\u2028", "\ufeff"]) + base_raw
        if k == 1:
            return base_raw + self.pick(["\u00a0", " ", "\x1f", "\n"])
        if k == 2:
            return base_raw[: self.r.randrange(len(base_raw) + 1)]
        return self.enc(v, self.rand_style())

    def special_args(self):
        """Families of argument texts around known equivalences."""
        fams = [
            ['{"n": 1}', '{"n": 1.0}', '{"n":1}', '{"n": 1e0}'],
            ['{"n": -0}', '{"n": 0}', '{"n": -0.0}', '{"n": 0.0}'],
            ['{"n": 1e400}', '{"n": Infinity}', '{"n": -1e400}',
             '{"n": -Infinity}'],
            ['{"n": NaN}', '{"n":NaN}', '{"n": nan}'],
            ['{"a": 1, "a": 2}', '{"a": 2}', '{"a": 2, "a": 1}'],
            ['{"s": "\\u00e9"}', '{"s": "é"}', '{"s": "\\u00E9"}',
             '{"s": "e\\u0301"}'],
            ['{"s": "\\ud83d\\ude00"}', '{"s": "😀"}', '{"s": "\\ud83d"}',
             '{"s": "\\uD83D"}', '{"s": "\\ude00\\ud83d"}'],
            ['{"a": 1', '{"a": 1}', ' {"a": 1} ', '\u00a0{"a": 1}',
             '{"a":1}', '\x1c{"a": 1}', '{"a": 1}\x1f'],
            ['', ' ', 'null', '[]', '{}', '"x"', '1', 'true', ' \n'],
            ['{"big": ' + "9" * 4301 + "}", '{"big":' + "9" * 4301 + "}",
             '{"big": ' + "9" * 4300 + "}", '{"big": ' + "9" * 4299 + "}"],
            ['{"x": [1, 2]}', '{"x":[1,2]}', '{"x": [2, 1]}',
             '{"x": [1, 2, ]}'],
            ['{"b": true, "a": null}', '{"a": null, "b": true}',
             '{"a": null, "b": True}'],
            ['{"f": 0.1}', '{"f": 0.10000000000000001}',
             '{"f": 0.1000000000000001}', '{"f": 1e-1}'],
            ['{"i": 12345678901234567890}', '{"i": 12345678901234567890.0}',
             '{"i": 1.2345678901234567e19}'],
            ['{"k": "a\\/b"}', '{"k": "a/b"}', '{"k": "a\\\\/b"}'],
        ]
        return self.pick(fams)

    def f_tool_errors(self):
        sc, agent, now = self.base("tool_errors")
        inj = sc["injection_config"]
        limit = self.pick([3, 3, 3, 4, 5, 6])
        if limit != 3 or self.chance(0.3):
            inj["tool_retries_limit"] = limit
        if self.chance(0.15):
            inj["tool_retries_hint"] = self.pick([
                "{tool_name} failed {count} times ({count})",
                "stop", "{tool_name}{tool_name} {count}{count} {x} {}",
                "Tool '{tool_name}' x{count}"])
        tool = self.pick(TOOLS)
        n = max(0, limit + self.pick([-1, 0, 0, 1, 2, 3, -2]))
        mode = self.r.randrange(3)
        if mode == 0:
            # one or two spellings from a family, so streaks often hold
            fam = self.special_args()
            sub = self.r.sample(fam, min(len(fam), self.r.choice([1, 2, 2,
                                                                  3])))
            raws = [self.pick(sub) for _ in range(n)]
        else:
            v = self.json_value(max_depth=self.r.randint(0, 5))
            if not isinstance(v, (dict, list)) and self.chance(0.7):
                v = {"cmd": v}
            base_raw = self.enc(v, self.rand_style())
            raws = []
            for _ in range(n):
                if self.chance(0.97 if mode == 1 else 0.75):
                    raws.append(self.raw_variant(v, base_raw))
                else:
                    raws.append(self.enc(self.perturb(v), self.rand_style()))
        content = []
        if self.chance(0.5):
            content.append(self.txt(self.text()))
        # older results in the same message
        for _ in range(self.r.randint(0, 2)):
            content.extend(self.success_pair(
                tool if self.chance(0.5) else None))
        ids = [self.new_id() for _ in range(n)]
        if self.chance(0.1) and n:
            ids[self.r.randrange(n)] = ""
        calls = [self.call(i, tool, raw) for i, raw in zip(ids, raws)]
        results = [self.result(i, tool, "error", "boom") for i in ids]
        # what breaks or bends the streak
        k = self.r.randrange(16)
        if k == 0 and n:  # a success inside the streak
            j = self.r.randrange(n)
            results[j]["state"] = self.pick(["success", "interrupted",
                                             "denied", "running"])
        elif k == 1 and n:  # a different tool inside the streak
            j = self.r.randrange(n)
            results[j]["name"] = self.pick(TOOLS)
        elif k == 2 and n:  # a call missing
            j = self.r.randrange(n)
            calls[j] = None
        elif k == 3 and n:  # duplicate call id, later wins
            j = self.r.randrange(n)
            dup = self.call(ids[j], tool, self.pick(
                [raws[0], '{"other": true}']))
            calls.append(dup)
        elif k == 4 and n:  # the result ids do not match call names
            j = self.r.randrange(n)
            calls[j] = self.call(ids[j], self.pick(TOOLS), raws[j])
        sc["_case"] = f"mode{mode} k{k}"
        # layout: interleaved or parallel
        if self.chance(0.6):
            for c, res in zip(calls, results):
                if c is not None:
                    content.append(c)
                content.append(res)
            content.extend(c for c in calls[len(results):] if c)
        else:
            content.extend(c for c in calls if c is not None)
            content.extend(results)
        if k == 5:  # a trailing success of another call
            content.extend(self.success_pair())
        if k == 6:  # trailing non-result blocks do not matter
            content.append(self.txt("let me retry"))
            content.append(self.call(self.new_id(), tool, raws[0]
                                     if raws else "{}"))
        msgs = self.background(agent, self.r.randint(0, 2))
        recent = now - timedelta(minutes=self.r.randint(0, 29))
        msgs.append(self.user())
        last = self.msg(agent, "assistant",
                        [self.hint_block(self.injection(
                            self.time_fields(recent, "UTC")))] + content)
        msgs.append(last)
        if k == 7:  # not the last message any more
            msgs.append(self.pick([self.user(), self.msg(
                "system", "system", [self.txt("x")])]))
        elif k == 8:  # another agent's message
            last["name"] = self.pick(OTHER_AGENTS)
        sc["context"] = msgs
        sc["cur_iter"] = self.pick([1, 2, 3, 0])
        return sc

    # ------------------------------------------------------------------
    # focus: templates, switches, lax and invalid configurations
    # ------------------------------------------------------------------
    def f_template(self):
        sc = self.f_time_interval() if self.chance(0.5) \
            else self.f_tool_errors()
        sc["_focus"] = "template"
        inj = sc["injection_config"]
        inj["template"] = self.pick([
            "{runtime_state}",
            "A:\n{runtime_state}\n--\n{runtime_state}",
            "{{runtime_state}} {x} {count} {} {tool_name}",
            "<r>{runtime_state}</r>",
            "{runtime_state}{runtime_state}",
            "{ runtime_state }{runtime_state}",
        ])
        if self.chance(0.5):
            inj["tool_retries_hint"] = self.pick([
                "{tool_name} failed {count} times ({count})",
                "{count}{tool_name}", "{TOOL_NAME} {Count}"])
        return sc

    def f_switches(self):
        sc = self.pick([self.f_time_interval, self.f_tool_errors,
                        self.f_context, self.f_tasks])()
        sc["_focus"] = "switches"
        inj = sc["injection_config"]
        if self.chance(0.5):
            inj["inject_runtime_state"] = False
            if self.chance(0.5):
                # accepted: the buffer is checked only when used
                sc["context_config"]["context_buffer_ratio"] = 0.9
                sc["context_config"]["trigger_ratio"] = 0.8
        else:
            inj["emit_hint_event"] = False
        return sc

    def f_lax(self):
        sc = self.pick([self.f_time_interval, self.f_tool_errors,
                        self.f_context])()
        sc["_focus"] = "lax"
        inj = sc["injection_config"]
        cc = sc["context_config"]
        common = self.chance(0.8)
        if common:
            choice = self.r.randrange(5)
            if choice == 0:
                inj["time_interval"] = self.pick(["0.5", "2", "0", 1, 0])
            elif choice == 1:
                inj["tool_retries_limit"] = self.pick(["4", 3.0, "3", 5.0])
            elif choice == 2:
                inj["emit_hint_event"] = self.pick(
                    ["yes", "no", "on", "off", "true", "false", "1", "0",
                     0, 1])
            elif choice == 3:
                cc["compression_tool_enabled"] = self.pick(
                    ["yes", "off", "true", 1])
                sc["input_tokens"] = 110000
            else:
                cc["trigger_ratio"] = self.pick(["0.8", "0.5", 1])
                if cc["trigger_ratio"] == 1:
                    cc["trigger_ratio"] = "0.9"
        else:
            choice = self.r.randrange(4)
            if choice == 0:
                inj["time_interval"] = self.pick([" 0.5 ", "1e1", True,
                                                  "inf"])
            elif choice == 1:
                inj["tool_retries_limit"] = self.pick(["4.0", " 4"])
            elif choice == 2:
                inj["emit_hint_event"] = self.pick(["t", "OFF", "Y", 1.0])
            else:
                inj["inject_runtime_state"] = self.pick(["TRUE", "n", 0.0])
        return sc

    def f_invalid(self):
        sc, agent, now = self.base("invalid")
        inj = sc["injection_config"]
        cc = sc["context_config"]
        k = self.r.randrange(16)
        if k == 0:
            inj["template"] = self.pick(["no placeholder", "{runtime-state}",
                                         "{RUNTIME_STATE}", ""])
        elif k == 1:
            inj["tool_retries_limit"] = self.pick([2, 0, -1, 3.5, "x"])
        elif k == 2:
            inj["time_interval"] = self.pick([-1, -0.0001, "x", None])
        elif k == 3:
            cc["trigger_ratio"] = self.pick([0, 0.95, 1, -0.1, 0.91])
        elif k == 4:
            cc["reserve_ratio"] = self.pick([0.8, 0.85, 0.9, 0])
        elif k == 5:
            cc["context_buffer_ratio"] = self.pick([0.8, 0.9, 1.0])
            if self.chance(0.3):
                cc["compression_tool_enabled"] = True
                inj["inject_runtime_state"] = False
        elif k == 6:
            cc["context_buffer_ratio"] = self.pick([1.5, -0.1])
        elif k == 7:
            inj["context_buffer_ratio"] = self.pick([0.8, 1.2, -1, 0.85])
        elif k == 8:
            inj["task_tool_names"] = self.pick(["TaskList", 5, [1]])
        elif k == 9:
            inj["timezone"] = self.pick([5, None, ["UTC"]])
        elif k == 10:
            inj["extra_fields"] = self.pick([{"a": 1}, ["a"], {"a": None}])
        elif k == 11:
            inj["emit_hint_event"] = self.pick(["maybe", 2, None])
        elif k == 12:
            sc["tasks"] = [{"state": self.pick(["done", "PENDING", None])}]
        elif k == 13:
            cc["trigger_ratio"] = 0.3
            cc["context_buffer_ratio"] = 0.3
        elif k == 14:
            inj["time_format"] = self.pick([5, None])
        else:
            inj["injection_source"] = self.pick([5, None])
        sc["context"] = self.background(agent) + [self.user()]
        return sc

    def f_mixed(self):
        """A realistic session: several steps, each with the injection the
        reference would have written then."""
        sc, agent, now = self.base("mixed")
        inj = sc["injection_config"]
        zone = self.pick(["UTC", "Asia/Shanghai", "America/New_York",
                          "Europe/London", "Australia/Lord_Howe"])
        inj["timezone"] = zone
        interval = self.pick([0.5, 0.5, 1, 0.25, 2])
        inj["time_interval"] = interval
        t = now - timedelta(minutes=self.r.randint(0, 600))
        msgs = []
        for _ in range(self.r.randint(1, 4)):
            msgs.append(self.user())
            fields = self.time_fields(t, zone)
            if self.chance(0.3):
                fields.append(("tasks", "You have 0 in-progress tasks and "
                               "2 pending tasks. Use `TaskList` to view them "
                               "if you don't know."))
            blk = self.hint_block(self.injection(fields)) \
                if self.chance(0.8) else None
            msgs.append(self.agent_turn(agent, blk,
                                        tools=self.r.randint(0, 3)))
            t += timedelta(minutes=self.r.randint(1, 120))
            if t > now:
                break
        if self.chance(0.7):
            msgs.append(self.user())
        sc["context"] = msgs
        sc["tasks"] = self.rand_tasks(0.4)
        if self.chance(0.3):
            sc["input_tokens"] = self.r.randrange(60000, 130000)
        return sc

    def invalid_line(self):
        return self.pick(['not json', '{', '[]', '{"now": 5}',
                          '{"agent_name": "x"}',
                          '{"now": "2026-07-22T02:30:00"}',
                          '{"now": "2026-07-22T02:30:00Z", "context": 5}'])

    FOCUS = [
        ("f_time_interval", 14), ("f_first_reply", 4), ("f_dst", 12),
        ("f_zones", 6), ("f_formats", 10), ("f_detection", 10),
        ("f_extra", 5), ("f_tasks", 8), ("f_context", 10),
        ("f_tool_errors", 18), ("f_template", 4), ("f_switches", 3),
        ("f_lax", 3), ("f_invalid", 4), ("f_mixed", 8), ("f_crash", 0.4),
        ("invalid_line", 0.3), ("f_far_future", 5),
    ]

    def line(self):
        names = [n for n, _ in self.FOCUS]
        weights = [w for _, w in self.FOCUS]
        name = self.r.choices(names, weights)[0]
        if name == "invalid_line":
            return self.invalid_line()
        sc = getattr(self, name)()
        return dumps(self.finish(sc))

    # ------------------------------------------------------------------
    # focus: tool arguments nested past a device's bound (33-1000 levels,
    # 960-990 around the reference's RecursionError); the host compares
    # them as the reference does, a device as raw.strip()
    # ------------------------------------------------------------------
    def deep_raw(self, levels, leaf, ws, swap):
        """Argument text for `levels` (a list of ("obj"|"arr", sibling)),
        written without recursion: Python's own limit is near 1000."""
        opens, closes = [], []
        for kind, sib in levels:
            if kind == "arr":
                opens.append("[" + (f"{sib},{ws}" if swap else ""))
                closes.append(("" if swap else f",{ws}{sib}") + "]")
            elif swap:  # the same object, its keys in the other order
                opens.append(f'{{"z":{ws}{sib},{ws}"a":{ws}')
                closes.append("}")
            else:
                opens.append(f'{{"a":{ws}')
                closes.append(f',{ws}"z":{ws}{sib}}}')
        return "".join(opens) + leaf + "".join(reversed(closes))

    def f_deep_args(self):
        sc, agent, now = self.base("deep_args")
        limit = self.pick([3, 3, 4])
        if limit != 3:
            sc["injection_config"]["tool_retries_limit"] = limit
        tool = self.pick(TOOLS)
        depth = self.pick([self.r.randint(33, 1000), self.r.randint(960, 990),
                           self.r.randint(33, 64), self.r.randint(960, 990)])
        shape = self.pick(["obj", "arr", "mix"])
        levels = [(shape if shape != "mix" else self.pick(["obj", "arr"]),
                   self.r.randint(0, 9)) for _ in range(depth)]
        leaf = self.pick(["1", '"x"', "null", "1.5", "true"])
        n = max(1, limit + self.pick([0, 0, 1, -1]))
        # 0: identical retries; 1: the same value spelled differently;
        # 2: one retry differs at the innermost level
        mode = self.r.randrange(3)
        raws = []
        for i in range(n):
            if mode == 1:
                raws.append(self.deep_raw(levels, leaf, self.pick(["", " "]),
                                          self.chance(0.5)))
            elif mode == 2 and i == n - 1:
                raws.append(self.deep_raw(levels, "2", "", False))
            else:
                raws.append(self.deep_raw(levels, leaf, "", False))
        content = []
        for raw in raws:
            cid = self.new_id()
            content.append(self.call(cid, tool, raw))
            content.append(self.result(cid, tool, "error", "boom"))
        msgs = self.background(agent, self.r.randint(0, 1))
        recent = now - timedelta(minutes=self.r.randint(0, 29))
        msgs.append(self.user())
        msgs.append(self.msg(agent, "assistant", [self.hint_block(
            self.injection(self.time_fields(recent, "UTC")))] + content))
        sc["context"] = msgs
        sc["_case"] = f"depth{depth // 100 * 100} {shape} mode{mode}"
        return sc

    FOCUS = FOCUS + [("f_deep_args", 2)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", help="output file (default: standard output)")
    args = ap.parse_args()
    gen = Gen(args.seed)
    out = open(args.out, "w", encoding="utf-8", newline="\n") \
        if args.out else sys.stdout
    for _ in range(args.count):
        out.write(gen.line() + "\n")
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
