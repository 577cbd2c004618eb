"""Benchmarks named with their parameters: `hackbench`, `readtwice:mb=512:files=2`.

Parameters follow the name, each after a colon, so that a comma can separate benchmarks
(`--bench hackbench,readtwice:mb=512`).

The form a run records, `lorelab bench --bench` and `lorelab review --bench` take, and a
`#lorelab test` command may carry.
"""

from __future__ import annotations

from bot.benchmarks.definition import Benchmark
from bot.benchmarks.registry import benchmark


def parse_spec(spec: str) -> tuple[str, dict[str, int | float | str]]:
    """("readtwice", {"mb": 512}) from "readtwice:mb=512"; ValueError on a malformed one."""
    name, _, rest = spec.strip().partition(":")
    parameters: dict[str, int | float | str] = {}
    for item in filter(None, (p.strip() for p in rest.split(":"))):
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ValueError(f"{spec!r}: expected NAME:KEY=VALUE:..., got {item!r}")
        parameters[key.strip()] = _value(value.strip())
    return name, parameters


def from_spec(spec: str) -> Benchmark:
    name, parameters = parse_spec(spec)
    return benchmark(name, **parameters)


def split_specs(text: str) -> list[str]:
    """"hackbench,readtwice:mb=512" -> ["hackbench", "readtwice:mb=512"]."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
