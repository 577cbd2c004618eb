"""What each step records in `run_steps.result`, as types instead of string keys.

The workers write these (`as_result`) and every reader (the outcome, the reply, the web
page, `runs show`) reads them back (`from_step`). Reading tolerates rows written before a field
existed: a missing key reads as its default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol, TypeVar

T = TypeVar("T", bound="_Record")


class StoredStep(Protocol):
    state: str
    result: dict[str, Any]


class _Record:
    @classmethod
    def from_result(cls: type[T], result: dict[str, Any] | None) -> T:
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in (result or {}).items() if k in known})

    @classmethod
    def from_step(cls: type[T], step: StoredStep | None) -> T:
        return cls.from_result(step.result if step is not None else None)

    def as_result(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Conflict:
    path: str
    hunks: str  # the conflicted region(s) as `git diff` shows them, with markers


@dataclass(frozen=True)
class ApplyRecord(_Record):
    """The `apply` step: the base chosen, and how far `git am` got."""

    base: str = ""
    base_reason: str = ""  # base-commit, subject-tag, b4-guess, branch-head, explicit
    base_detail: str = ""  # the choice in words, e.g. "head of mm-unstable; ..."
    base_branch: str = ""
    patched: str | None = None  # the commit after the last patch
    applied: int = 0  # patches applied before the failure (all of them on success)
    failed_patch: str | None = None  # "0002 mm/vmscan: ..." as git am names it
    conflicts: tuple[Conflict, ...] = ()
    changes_lru_gen: bool = False  # the applied series changes MGLRU code (bot.runs.lru)

    @classmethod
    def from_result(cls, result: dict[str, Any] | None) -> ApplyRecord:
        record = super().from_result(result)
        conflicts = tuple(c if isinstance(c, Conflict) else Conflict(c["path"], c.get("hunks", ""))
                          for c in record.conflicts)
        return cls(**{**asdict(record), "conflicts": conflicts})

    @property
    def conflicted_paths(self) -> tuple[str, ...]:
        return tuple(c.path for c in self.conflicts)


@dataclass(frozen=True)
class BuildRecord(_Record):
    """A `build-base` or `build-patched` step: did the kernel build, and where it is."""

    ok: bool = False
    commit: str = ""
    cache_key: str = ""
    cached: bool = False  # the artifact cache had it: nothing was built
    artifact_dir: str | None = None  # bzImage, .config and build.json
    seconds: float = 0.0
    objdir: str = ""
    errors: tuple[dict[str, Any], ...] = ()  # location, message, excerpt of the first errors
    isolation: str = ""

    @classmethod
    def from_build(cls, result: Any) -> BuildRecord:
        """From a `workers.kernel.build.BuildResult` (its log is kept on the step's row)."""
        data = result.as_dict()
        data["errors"] = tuple(data.get("errors") or ())
        return cls.from_result(data)


@dataclass(frozen=True)
class BenchCampaign:
    id: int
    benchmark: str
    state: str
    error: str | None = None


@dataclass(frozen=True)
class BenchRecord(_Record):
    """The `bench` step: the lab host and each benchmark's campaign."""

    host: str = ""
    runner: str = ""
    campaigns: tuple[BenchCampaign, ...] = ()

    @classmethod
    def from_result(cls, result: dict[str, Any] | None) -> BenchRecord:
        record = super().from_result(result)
        campaigns = tuple(c if isinstance(c, BenchCampaign) else BenchCampaign(**c)
                          for c in record.campaigns)
        return cls(host=record.host, runner=record.runner, campaigns=campaigns)


@dataclass(frozen=True)
class ReportRecord(_Record):
    """The `report` step: the reply written (its outbox row) or why none was."""

    reply: int | None = None  # the outbox row's id
    message_id: str | None = None
    kind: str | None = None
    state: str | None = None
    new: bool = False  # False: a repeated step found the reply it had written
    why: str = ""
