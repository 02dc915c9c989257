"""Plain YAML scalars as the pinned Pulumi CLI reads a stack file, and the value a program then receives.

The CLI (v3.274.1, the version tools/e2e builds) reads `Pulumi.<stack>.yaml` with go-yaml v3
(`sdk/go/common/encoding/marshal.go` imports `gopkg.in/yaml.v3`), not v2 and not YAML 1.1 as PyYAML's
SafeLoader does. `workspace.LoadProjectStackBytes` decodes the file, re-encodes it and decodes it again,
and `config.Value.Value` hands the program each top-level value as a string (objects as JSON). What that
means for a plain (unquoted) scalar, ported from go-yaml v3.0.1 `resolve.go` and Pulumi's `object.go`:

- booleans are only true/True/TRUE and false/False/FALSE: `yes`, `no`, `on`, `off`, `y`, `n` are strings;
- null is ``, `~`, `null`, `Null`, `NULL`; a top-level null reaches the program as the empty string;
- `22:30` is a string (no base-60 numbers); `0o17`, `017`, `0x1F`, `0b101`, `1_000`, `1e5`, `+.5`, `0128`
  and `09` are numbers (Go's `strconv.ParseInt` with base 0, then `ParseUint`, then a float pattern);
- a float with an integral value (`2.0`, `1e5`) reaches the program as an integer, as Go's JSON writes it;
- a date or time (`2024-01-01`) becomes the string Go's `time.Time.String` writes
  (`2024-01-01 00:00:00 +0000 UTC`); a numeric offset is written as `+0200 +0200` (the CLI names the
  offset after the local zone when they agree: recorded with TZ=UTC);
- `.inf` and `.nan` make the CLI refuse the file (Go's JSON has no infinity).

tests/data/pulumi_cli_yaml.json holds these cases as the real loader read them (tools/record_cli_yaml.py
runs it); tests/test_stack_file_yaml.py checks this module against every row and the probe on generated scalars.
"""

from __future__ import annotations

import calendar
import math
import re
from decimal import Decimal
from typing import Any, Union

NULLS = frozenset(["", "~", "null", "Null", "NULL"])
BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
SPECIAL_FLOATS = {
    **dict.fromkeys([".nan", ".NaN", ".NAN"], math.nan),
    **dict.fromkeys([".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"], math.inf),
    **dict.fromkeys(["-.inf", "-.Inf", "-.INF"], -math.inf),
}
YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
INT64 = (-(2**63), 2**63 - 1)
UINT64_MAX = 2**64 - 1
# go-yaml's timestamp layouts (time.Parse): date, date and time with T/t and a zone, date and time without.
TIMESTAMP = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{1,2})-(?P<day>[0-9]{1,2})"
    r"(?:(?:(?P<t>[Tt])|(?P<space> ))(?P<hour>[0-9]{1,2}):(?P<minute>[0-9]{1,2}):(?P<second>[0-9]{1,2})"
    r"(?:[.,](?P<fraction>[0-9]+))?(?P<zone>Z|(?P<sign>[-+])(?P<zone_hour>[0-9]{2}):(?P<zone_minute>[0-9]{2}))?)?"
)
MAX_JSON_INTEGRAL = 1e21  # Go's JSON writes floats below this in fixed notation ("100000"), above with an exponent

Scalar = Union[None, bool, int, float, str]


def _go_parse_uint(text: str, base: int) -> int | None:
    """Go's `strconv.ParseUint(text, base, 64)` for base 0 (prefixes 0b, 0o, 0x; a leading 0 is octal) or a
    fixed base; None where Go returns an error."""
    if base == 0:
        base = 10
        if text[:1] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in ("b", "o", "x"):
                base, text = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, text = 8, text[1:]
                if text == "":
                    return 0
    digits = "0123456789abcdef"[:base]
    if text == "" or any(c.lower() not in digits for c in text):
        return None
    value = int(text, base)
    return value if value <= UINT64_MAX else None


def _go_parse_int(text: str, base: int) -> int | None:
    """Go's `strconv.ParseInt(text, base, 64)`: an optional sign, then `ParseUint`, within int64."""
    sign, rest = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    magnitude = _go_parse_uint(rest, base)  # None for an empty `rest` too
    if magnitude is None or not INT64[0] <= sign * magnitude <= INT64[1]:
        return None
    return sign * magnitude


def _go_parse_float(text: str) -> float | None:
    """Go's `strconv.ParseFloat(text, 64)` for the decimal forms go-yaml hands it; None on overflow."""
    if "_" in text:
        if re.search(r"(^|[^0-9])_|_([^0-9]|$)", text.lstrip("+-")):  # Go's `underscoreOK`: each `_` between digits
            return None
        text = text.replace("_", "")
    if not YAML_STYLE_FLOAT.fullmatch(text):
        return None
    value = float(text)
    return None if math.isinf(value) else value


def _timestamp(text: str) -> str | None:
    """A go-yaml timestamp as `time.Time.String()` writes it after Pulumi's round trip, or None."""
    match = TIMESTAMP.fullmatch(text)
    if match is None or (match["hour"] is not None and match["zone"] is not None and match["t"] is None):
        return None  # the zone is only in the T/t layouts
    if match["t"] is not None and match["zone"] is None:
        return None  # RFC 3339 layouts require a zone
    year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
    hour, minute, second = (int(match[k] or 0) for k in ("hour", "minute", "second"))
    # Year 0 is a leap year in Go's proleptic calendar, as 2000 is in Python's.
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year or 2000, month)[1]):
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    fraction = (match["fraction"] or "")[:9].rstrip("0")  # Go reads any number of digits, keeps nanoseconds
    offset = 0
    if match["sign"]:
        zone_hour, zone_minute = int(match["zone_hour"]), int(match["zone_minute"])
        if zone_hour > 24 or zone_minute > 60:
            return None
        offset = (zone_hour * 60 + zone_minute) * (-1 if match["sign"] == "-" else 1)
    if offset == 0:
        where = "+0000 UTC"
    else:
        written = f"{'-' if offset < 0 else '+'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
        where = f"{written} {written}"
    return (
        f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
        + (f".{fraction}" if fraction else "")
        + f" {where}"
    )


def resolve_plain(text: str) -> Scalar:
    """The value of an unquoted scalar as go-yaml v3 resolves it (`resolve.go`, `resolve`), with Pulumi's
    rendering of dates. Infinite and NaN floats are returned as such: the caller refuses them."""
    if text in NULLS:
        return None
    if text in BOOLEANS:
        return BOOLEANS[text]
    if text in SPECIAL_FLOATS:
        return SPECIAL_FLOATS[text]
    hint = text[0]
    if hint == ".":
        value = _go_parse_float(text)
        return text if value is None else value
    if hint not in "+-0123456789":
        return text
    stamp = _timestamp(text)
    if stamp is not None:
        return stamp
    plain = text.replace("_", "")
    for number in (_go_parse_int(plain, 0), _go_parse_uint(plain, 0) if plain[:1] != "-" else None):
        if number is not None:
            return number
    if YAML_STYLE_FLOAT.fullmatch(plain):
        value = _go_parse_float(plain)
        if value is not None:
            return value
    for prefix, base in (("0b", 2), ("0o", 8)):  # go-yaml's own prefixes, after Go's base-0 parse failed
        if plain.startswith(prefix):
            digits = plain[len(prefix) :]
            number = _go_parse_int(digits, base)
            if number is None:
                number = _go_parse_uint(digits, base)
            return text if number is None else number
        if plain.startswith("-" + prefix):
            number = _go_parse_int("-" + plain[len(prefix) + 1 :], base)
            return text if number is None else number
    return text


def as_json_value(value: Any) -> Any:
    """A decoded value as the program reads it back from the CLI's JSON: floats with an integral value
    below 1e21 become integers (Go writes 2.0 as `2`), with the digits Go writes (its shortest repr)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < MAX_JSON_INTEGRAL:
        return int(Decimal(repr(value)))
    if isinstance(value, dict):
        return {key: as_json_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_json_value(item) for item in value]
    return value
