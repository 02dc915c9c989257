"""One-line, key-path-first errors for bad stack input (config, catalog data, CLI arguments)."""

from __future__ import annotations

import typing
from collections.abc import Iterable
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
    """Bad stack input. A `RunError` so that `pulumi up` prints the message without a traceback.

    The message is one line, key path first, and bounded: it never echoes more than a short excerpt of
    the input, however large the input is."""

    def __init__(self, key_path: str, problem: str, allowed: str | None = None) -> None:
        self.key_path = key_path
        message = f"{key_path}: {problem}"
        if allowed:
            message += f"; allowed: {allowed}"
        super().__init__(bounded(message, MAX_LINE, quote=False))

    @classmethod
    def combined(cls, errors: list[ConfigError]) -> ConfigError:
        """All problems in one line, so a user fixes them in one pass (the first ones, if there are many)."""
        if len(errors) == 1:
            return errors[0]
        first = errors[0]
        merged = cls(first.key_path, "")
        shown: list[str] = []
        for error in errors:
            if len(" | ".join([*shown, str(error)])) > MAX_LINE - 40:
                break
            shown.append(str(error))
        rest = len(errors) - len(shown)
        merged.args = (
            " | ".join(shown or [bounded(str(first), MAX_LINE - 40, quote=False)])
            + (f" | ... and {rest} more" if rest and shown else ""),
        )
        return merged


def _key_text(key: str) -> str:
    """A key as a path repeats it: as written, or quoted with escapes when it holds whitespace or control
    characters (a path is one word: `a.'b\\x20c'`, never `a.b c`)."""
    if key == "":
        return "''"
    if key.isprintable() and not any(c.isspace() for c in key):
        return bounded(key, MAX_KEY, quote=False)
    return bounded(repr(key).replace(" ", "\\x20"), MAX_KEY, quote=False)


def key_path(parts: Iterable[Any], prefix: str = "") -> str:
    """Render a pydantic `loc` as `prefix` + `a.b[0].c` (a long key cut short; pydantic's `[key]` marker, for
    an error in a mapping's key rather than its value, left out)."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part != "[key]":
            name = _key_text(str(part))
            text += f".{name}" if text else name
    return prefix + text


def _field_names(model: type[pydantic.BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_at(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> type[pydantic.BaseModel] | None:
    """Walk a model class along an error location to the model that owns the last key."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        if not (isinstance(current, type) and issubclass(current, pydantic.BaseModel)):
            return None
        field = next((f for n, f in current.model_fields.items() if (f.alias or n) == part or n == part), None)
        if field is None:
            return current
        annotation = field.annotation
        for _ in range(3):  # unwrap Optional[...] / list[...] / dict[str, ...]
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
                break
            annotation = args[-1] if args else annotation
        current = annotation
    return current if isinstance(current, type) and issubclass(current, pydantic.BaseModel) else None


def from_validation_error(
    exc: pydantic.ValidationError, model: type[pydantic.BaseModel], prefix: str = ""
) -> ConfigError:
    """Turn every pydantic error into one line: `path: problem (got value); allowed: ...`."""
    errors = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        path = key_path(loc, prefix)
        if error["type"] == "extra_forbidden":
            owner = _model_at(model, loc[:-1])
            errors.append(ConfigError(path, "unknown key", ", ".join(_field_names(owner)) if owner else None))
            continue
        problem = error["msg"].removeprefix("Value error, ")
        if error["type"] not in ("missing", "credential"):  # a credential is never echoed
            problem += f" (got {bounded(error.get('input'))})"
        if error["type"] == "bool_type" and str(error.get("input")).lower() in YAML_1_1_BOOLEANS:
            problem += "; the Pulumi CLI's YAML (1.2) reads it as a string: write true or false"
        errors.append(ConfigError(path, problem))
    return ConfigError.combined(errors)
