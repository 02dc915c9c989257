"""A CronJob `schedule` as Kubernetes accepts it, checked before `up` (the API server parses it with robfig/cron's
standard parser; Kubernetes docs, "CronJob", "Schedule syntax"): five fields (minute hour day-of-month month
day-of-week) separated by any whitespace (robfig/cron v3 parser.go splits with `strings.Fields`), each `*` or
`?`, a number, a range `a-b`, any with a step `/n`, or a comma-separated list of these; months and weekdays also
by their three-letter English names; or one of the macros, including `@every <Go duration>` (parser.go
`parseDescriptor`, `time.ParseDuration`). `TZ=`/`CRON_TZ=` are refused
as the API server refuses them (the `timeZone` field says the zone). Not croniter: it needs python-dateutil and
accepts more than Kubernetes (a seconds field, `L`, `W`, `#`).
"""

from __future__ import annotations

import re

MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTHS = {name: number for number, name in enumerate(MONTH_NAMES, 1)}
WEEKDAYS = {name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, MONTHS),
    ("day of week", 0, 6, WEEKDAYS),
)
# Go's time.ParseDuration: an optionally signed sequence of decimal numbers, each with a unit.
GO_DURATION = re.compile(r"((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+")
_ITEM = re.compile(r"(?P<range>[*?]|[0-9a-z]+(-[0-9a-z]+)?)(/(?P<step>[0-9]+))?")


def _value(text: str, field: str, low: int, high: int, names: dict[str, int]) -> int:
    number = names.get(text) if text.isalpha() else int(text) if text.isdigit() else None
    if number is None:
        raise ValueError(f"{field} {text!r} is not a number" + (" or a name" if names else ""))
    if not low <= number <= high:
        raise ValueError(f"{field} {number} is outside {low}-{high}")
    return number


def _check_field(text: str, field: str, low: int, high: int, names: dict[str, int]) -> None:
    for item in text.lower().split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise ValueError(f"{field} {item!r} is not *, a number, a range or a step")
        if match["step"] is not None and int(match["step"]) == 0:
            raise ValueError(f"{field} step {item!r} must be a positive number")
        if match["range"] in ("*", "?"):
            continue
        first, _, last = match["range"].partition("-")
        start = _value(first, field, low, high, names)
        if last and _value(last, field, low, high, names) < start:
            raise ValueError(f"{field} range {item!r} ends before it begins")


def check_cron_schedule(schedule: str) -> str:
    """`schedule` if Kubernetes accepts it, else a `ValueError` saying which field is wrong."""
    if "TZ" in schedule:
        raise ValueError("TZ= and CRON_TZ= are refused by Kubernetes; the CronJob's timeZone field sets the zone")
    if schedule.startswith("@"):
        every = schedule.removeprefix("@every ")
        if every != schedule and GO_DURATION.fullmatch(every):
            return schedule
        if schedule not in MACROS:
            raise ValueError(f"unknown macro; allowed: {', '.join(sorted(MACROS))}, @every <duration such as 6h>")
        return schedule
    fields = schedule.split()
    if len(fields) != len(FIELDS):
        raise ValueError("must be five fields separated by whitespace (minute hour day-of-month month day-of-week)")
    for text, (field, low, high, names) in zip(fields, FIELDS, strict=True):
        _check_field(text, field, low, high, names)
    return schedule
