"""One-line, key-path-first errors for bad stack input (config, catalog data, CLI arguments)."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterable, Iterator
from typing import Any

import pulumi
import pydantic

MAX_ECHO = 80  # characters of a user's value an error repeats
MAX_LINE = 1000  # characters of a whole (combined) error line
MAX_KEY = 60  # characters of one key a key path repeats
YAML_1_1_BOOLEANS = frozenset(["y", "yes", "n", "no", "on", "off"])  # booleans in YAML 1.1, strings to the CLI


def bounded(value: Any, limit: int = MAX_ECHO, *, quote: bool = True) -> str:
    """A value as an error quotes it: repr (or text), one line, at most `limit` characters."""
    text = repr(value) if quote else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ConfigError(pulumi.RunError):
    """Bad stack input, one bounded line, key path first: a `RunError`, so `pulumi up` prints no traceback."""

    def __init__(self, key_path: str, problem: str, allowed: str | None = None) -> None:
        self.key_path = key_path
        message = f"{key_path}: {problem}" + (f"; allowed: {allowed}" if allowed else "")
        super().__init__(bounded(message, MAX_LINE, quote=False))

    @classmethod
    def combined(cls, errors: list[ConfigError]) -> ConfigError:
        """All problems in one line, so a user fixes them in one pass (the first ones, if there are many)."""
        if len(errors) == 1:
            return errors[0]
        shown: list[str] = []
        for error in errors:
            if len(" | ".join([*shown, str(error)])) > MAX_LINE - 40:
                break
            shown.append(str(error))
        rest = len(errors) - len(shown)
        merged = cls(errors[0].key_path, "")
        text = " | ".join(shown or [bounded(str(errors[0]), MAX_LINE - 40, quote=False)])
        merged.args = (text + (f" | ... and {rest} more" if rest and shown else ""),)
        return merged


class Problems(list[ConfigError]):
    """The problems a check finds, each added in one line and raised together as one `ConfigError`."""

    def add(self, key: str, problem: str, allowed: str | None = None) -> None:
        self.append(ConfigError(key, problem, allowed))


def _key_text(key: str) -> str:
    """A key as a path repeats it: as written, or quoted with escapes when it is empty or holds whitespace or
    control characters (a path is one word: `a.'b\\x20c'`, never `a.b c`)."""
    plain = key and key.isprintable() and not any(c.isspace() for c in key)
    return bounded(key if plain else repr(key).replace(" ", "\\x20"), MAX_KEY, quote=False)


def key_path(parts: Iterable[Any], prefix: str = "") -> str:
    """Render a pydantic `loc` as `prefix` + `a.b[0].c` (a long key cut short; pydantic's `[key]` marker, for
    an error in a mapping's key rather than its value, left out)."""
    text = "".join(
        f"[{part}]" if isinstance(part, int) else f".{_key_text(str(part))}" for part in parts if part != "[key]"
    )
    return prefix + text.removeprefix(".")


def walk(value: Any, parts: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(key path, value) of every value in a tree of mappings and lists, parents first."""
    yield parts, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from walk(item, (*parts, key))


def _field_names(model: type[pydantic.BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_in(annotation: Any) -> type[pydantic.BaseModel] | None:
    """The model an annotation holds (`Optional[M]`, `list[M]`, `dict[str, M]`), if any."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation
    return next(filter(None, map(_model_in, typing.get_args(annotation))), None)


def _model_at(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> type[pydantic.BaseModel] | None:
    """Walk a model class along an error location to the model that owns the last key."""
    current: type[pydantic.BaseModel] | None = model
    for part in loc:
        if current is None or isinstance(part, int):
            continue
        field = next((f for name, f in current.model_fields.items() if part in (name, f.alias)), None)
        if field is None:
            return current
        current = _model_in(field.annotation)
    return current


# A validator's message `"<field>: problem"` (or `"[i].field: problem"` on a list) locates the problem there.
FIELD_PREFIX = re.compile(r"((?:[A-Za-z_]\w*|\[\d+\])(?:\.[A-Za-z_]\w*|\[\d+\])*): (.+)", re.DOTALL)


def _located(model: type[pydantic.BaseModel], loc: tuple[Any, ...], problem: str, value: Any) -> tuple[Any, ...]:
    """(location, problem) with a validator's prefix moved into the location when it names a field of the model
    at `loc`, or an item of the list `value`."""
    match = FIELD_PREFIX.fullmatch(problem)
    if match is None:
        return loc, problem
    parts = [int(index) if index else name for index, name in re.findall(r"\[(\d+)\]|(\w+)", match[1])]
    owner = _model_at(model, loc)
    if parts[0] in (_field_names(owner) if owner else []) or (isinstance(parts[0], int) and isinstance(value, list)):
        return (*loc, *parts), match[2]
    return loc, problem


def from_validation_error(
    exc: pydantic.ValidationError, model: type[pydantic.BaseModel], prefix: str = ""
) -> ConfigError:
    """Turn every pydantic error into one line: `path: problem (got value); allowed: ...`."""
    problems = Problems()
    for error in exc.errors():
        loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden":
            owner = _model_at(model, loc[:-1])
            problems.add(key_path(loc, prefix), "unknown key", ", ".join(_field_names(owner)) if owner else None)
            continue
        message, _, allowed = error["msg"].removeprefix("Value error, ").partition("; allowed: ")
        located, problem = _located(model, loc, message, error.get("input"))
        if error["type"] not in ("missing", "credential") and located == loc:  # a credential is never echoed
            problem += f" (got {bounded(error.get('input'))})"  # a validator's located message stays as written
        if error["type"] == "bool_type" and str(error.get("input")).lower() in YAML_1_1_BOOLEANS:
            problem += "; the Pulumi CLI's YAML (1.2) reads it as a string: write true or false"
        problems.add(key_path(located, prefix), problem, allowed or None)
    return ConfigError.combined(problems)
