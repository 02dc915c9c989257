"""Reading the project's data files (`catalog/`): one YAML reader, one way to validate, one error shape."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import pydantic
import yaml

from serving_stack.errors import ConfigError, from_validation_error

PROJECT_DATA_DIR = Path(__file__).resolve().parents[2] / "catalog"
# The one switch to another copy of the data (an absorbed upstream revision under test, a staging copy).
CATALOG_DIR_ENV = "NEMOTRON_CATALOG_DIR"
DATA_DIR = Path(os.environ[CATALOG_DIR_ENV]).resolve() if os.environ.get(CATALOG_DIR_ENV) else PROJECT_DATA_DIR
Model = TypeVar("Model", bound=pydantic.BaseModel)


class Data(pydantic.BaseModel):
    """Base of every data-file model: unknown keys are errors, values immutable."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


def data_label(path: Path, root: Path = DATA_DIR) -> str:
    """`catalog/<path below the data root>`, the name messages use whatever the root is."""
    try:
        return f"catalog/{path.relative_to(root).as_posix()}"
    except ValueError:
        return path.name


def read_documents(path: Path, key: str) -> list[dict[str, Any]]:
    """Every non-empty YAML document of a file; a missing or malformed file stops with `key` named."""
    if not path.is_file():
        raise ConfigError(key, f"file {path.name} does not exist ({path})")
    try:
        documents = list(yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))
    except yaml.YAMLError as error:
        raise ConfigError(key, f"{path.name} is not valid YAML ({str(error).splitlines()[0]})") from None
    return [doc for doc in documents if doc]


def load_model(path: Path, model: type[Model], root: Path = DATA_DIR) -> Model:
    """One data file validated into `model`; errors name the file and the key path inside it."""
    label = data_label(path, root)
    documents = read_documents(path, label)
    if len(documents) != 1:
        raise ConfigError(label, f"expected one YAML document, found {len(documents)}")
    try:
        return model.model_validate(documents[0])
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, model, prefix=f"{label}: ") from None
