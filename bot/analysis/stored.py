"""A judgement as stored data: a `Comparison` (and everything in it) to JSON-ready values and
back, exactly, so that a campaign is judged once and every reader renders that judgement.

Frozen dataclasses, enums, tuples, optional values and floats; infinities and NaN (an interval
too wide for the level) are written as the strings "inf", "-inf" and "nan", which JSON and
PostgreSQL's json type can hold.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, TypeVar

from bot.analysis.verdict import Comparison

T = TypeVar("T")


def to_data(value: Any) -> Any:
    """`value` as JSON-ready data (dicts, lists, str, int, float, bool, None)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, tuple | list):
        return [to_data(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    number = float(value)  # numpy scalars too
    return number if math.isfinite(number) else str(number)


def from_data(kind: type[T], data: Any) -> T:
    """The `kind` that `to_data` wrote as `data`."""
    return _read(kind, data)  # type: ignore[no-any-return]


def comparison_from_data(data: dict[str, Any]) -> Comparison:
    return from_data(Comparison, data)


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _read(hint: Any, data: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return None if data is None else _read(options[0], data)
    if origin is tuple:
        args = typing.get_args(hint)
        item = args[0]
        return tuple(_read(item, v) for v in data)
    if dataclasses.is_dataclass(hint):
        hints = _hints(hint)
        return hint(**{f.name: _read(hints[f.name], data[f.name])
                       for f in dataclasses.fields(hint) if f.name in data})
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(data)
    if hint is float:
        return float(data)  # "inf", "-inf" and "nan" too
    if hint is int:
        return int(data)
    return data
