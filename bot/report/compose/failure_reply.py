"""Replies when a series could not be tested: it does not build, or it does not apply.

Build failure: the first compiler errors with file:line and two lines of context, the config
and compiler, the base; never the whole log (a link to it instead). Does not apply: the base
tried and how it was chosen, the first failing patch, the conflicting files. A does-not-apply
reply goes out only where the deployment enables it (ReportSettings.does_not_apply_replies).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.report.compose.build_log import first_errors
from bot.report.compose.inputs import ParentMessage, ReplyOptions, SeriesInfo, TreeInfo
from bot.report.compose.kinds import BUILD_FAILURE, DOES_NOT_APPLY
from bot.report.compose.message import ComposedReply, compose_reply
from bot.report.compose.results import BuildInfo
from bot.report.compose.text import Block, Fields, Preformatted, Prose, glue, indent


@dataclass(frozen=True)
class BuildFailureContext:
    parent: ParentMessage
    series: SeriesInfo
    tree: TreeInfo
    build: BuildInfo
    log: str  # the build output; only its first errors are quoted
    base_builds: bool = True  # the base built with the same config and compiler
    failing_patch: tuple[int, str] | None = None  # (index, subject) when found by bisection
    log_url: str = ""
    reproduce: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApplyFailureContext:
    parent: ParentMessage
    series: SeriesInfo
    tree: TreeInfo  # the base tried; base_source says how it was chosen
    failing_patch: int  # 1-based
    failing_subject: str
    conflicts: tuple[str, ...]  # files git could not merge
    reproduce: tuple[str, ...] = ()


def compose_build_failure(ctx: BuildFailureContext, options: ReplyOptions) -> ComposedReply:
    return _compose(BUILD_FAILURE, ctx.parent, ctx.series, options, build_failure_body(ctx))


def compose_apply_failure(ctx: ApplyFailureContext, options: ReplyOptions) -> ComposedReply:
    return _compose(DOES_NOT_APPLY, ctx.parent, ctx.series, options, apply_failure_body(ctx))


def _compose(
    kind: str, parent: ParentMessage, series: SeriesInfo, options: ReplyOptions, blocks: list[Block]
) -> ComposedReply:
    return compose_reply(
        kind=kind,
        parent=parent,
        author=parent.sender,
        options=options,
        blocks=blocks,
        series_version_id=series.series_version_id,
        version=series.version,
        run_id=series.run_id,
        anchor=series.anchor_msgid or parent.msgid,
    )


def build_failure_body(ctx: BuildFailureContext) -> list[Block]:
    build, tree = ctx.build, ctx.tree
    same = (
        " The base builds with the same config and compiler."
        if ctx.base_builds
        else " The base fails to build too."
    )
    blocks: list[Block] = [
        Prose(
            f"lorelab could not build {ctx.series.describe()} applied to {tree.tree} "
            f"{tree.branch} at {glue('base ' + tree.short_base)}: the patched kernel does not "
            f"compile with {build.config_name} and {build.compiler}.{same}"
            + ctx.series.resent_sentence()
        )
    ]
    if ctx.failing_patch is not None:
        index, subject = ctx.failing_patch
        which = f'{index}/{ctx.series.patches} "{subject}"'
        blocks.append(Prose(f"The first patch that does not build is {which}."))
    errors = first_errors(ctx.log)
    if errors:
        noun = "error" if len(errors) == 1 else "errors"
        blocks.append(Prose(f"The first {noun}:"))
        rows: list[str] = []
        for error in errors:
            if rows:
                rows.append("")
            rows.extend(error.excerpt)
        blocks.append(Preformatted(indent(rows)))
    else:
        blocks.append(Prose("No compiler error could be picked out of the log; see the full log."))
    config = f"{build.config_name} (sha256 {build.config_hash[:12]})"
    if build.config_url:
        config += f", {build.config_url}"
    fields = [
        f"Kernel config: {config}",
        f"Compiler: {build.compiler}",
        f"Base: {tree.describe()}"
        + (f" (chosen from {tree.base_source})" if tree.base_source else ""),
    ]
    if tree.head:
        fields.append(f"Patched head: {tree.short_head}")
    if ctx.log_url:
        fields.append(f"Full log: {ctx.log_url}")
    blocks.append(Fields(tuple(fields)))
    blocks.extend(_tail(ctx.reproduce, ctx.series))
    return blocks


def apply_failure_body(ctx: ApplyFailureContext) -> list[Block]:
    tree, series = ctx.tree, ctx.series
    how = f" (chosen from {tree.base_source})" if tree.base_source else ""
    applied = ctx.failing_patch - 1
    before = f"; the {applied} before it applied" if applied > 1 else ""
    before = "; the one before it applied" if applied == 1 else before
    blocks: list[Block] = [
        Prose(
            f"lorelab could not apply {series.describe()} to {tree.tree} {tree.branch} at "
            f"{glue('base ' + tree.short_base)}{how}: patch {ctx.failing_patch}/{series.patches} "
            f'"{ctx.failing_subject}" does not apply{before}.' + series.resent_sentence()
        )
    ]
    if ctx.conflicts:
        noun = "file" if len(ctx.conflicts) == 1 else "files"
        blocks.append(Prose(f"Conflicting {noun}:"))
        blocks.append(Preformatted(indent(ctx.conflicts)))
    if "base-commit" not in tree.base_source:
        blocks.append(
            Prose(
                "If the series is based on another tree or commit, `git format-patch "
                "--base=<commit>` records it in a base-commit: line that lorelab follows."
            )
        )
    blocks.extend(_tail(ctx.reproduce, series))
    return blocks


def _tail(reproduce: tuple[str, ...], series: SeriesInfo) -> list[Block]:
    blocks: list[Block] = []
    if reproduce:
        blocks.append(Prose("To reproduce without lorelab:"))
        blocks.append(Preformatted(indent(reproduce)))
    if series.status_url:
        blocks.append(Prose(f"Series page: {series.status_url}"))
    return blocks
