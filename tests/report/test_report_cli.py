"""`lorelab outbox ...` as a maintainer uses it: list, show, approve, reject, retry, send."""

from __future__ import annotations

import dataclasses
import json
import mailbox
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from bot.cli import outbox as outbox_cli
from bot.config.report import ReportSettings
from bot.db.session import Database, ensure_schema
from bot.report.compose.benchmark_reply import compose_benchmark_reply
from bot.report.compose.inputs import BotIdentity, Person, ReplyOptions
from bot.report.compose.message import ComposedReply
from bot.report.compose.results_file import load_results
from bot.report.deliver import outbox
from tests.support.paths import FIXTURES

RESULTS = FIXTURES / "results" / "vmscan-bailout-take2.json"


def compose(series_version_id: int) -> ComposedReply:
    ctx, date = load_results(json.loads(RESULTS.read_text()))
    series = dataclasses.replace(ctx.series, series_version_id=series_version_id)
    identity = BotIdentity(Person("lorelab", "lorelab@lorelab.example.org"), "lorelab.example.org")
    assert date is not None
    return compose_benchmark_reply(
        dataclasses.replace(ctx, series=series), ReplyOptions(identity=identity, date=date)
    )


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Invoke outbox commands against a SQLite file and a data directory under tmp_path."""
    url = f"sqlite:///{tmp_path / 'lorelab.db'}"
    monkeypatch.setenv("LORELAB_DATABASE_URL", url)
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LORELAB_CONFIG", raising=False)
    monkeypatch.setattr("bot.cli.context.CONFIG_PATH", None)
    monkeypatch.setattr("bot.config.default_config_path", lambda: tmp_path / "none.toml")
    app = typer.Typer()
    outbox_cli.register(app)
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str, BaseException | None]:
        result = runner.invoke(app, list(args))
        return result.exit_code, result.stdout, result.exception

    db = Database(url)
    ensure_schema(db.engine)
    yield invoke, db
    db.dispose()


def test_a_moderated_reply_is_approved_sent_to_the_maildir_and_never_retried(
    cli, tmp_path: Path
) -> None:  # noqa: ANN001
    invoke, db = cli
    settings = ReportSettings(moderation=True)
    with db.session() as session:
        held, _ = outbox.enqueue(session, compose(1042), settings)
        dropped, _ = outbox.enqueue(session, compose(1043), settings)
        session.flush()
        held_id, dropped_id, message_id = held.id, dropped.id, held.message_id

    code, out, _ = invoke("outbox", "list", "--state", "pending-approval", "--json")
    assert code == 0
    assert [row["id"] for row in json.loads(out)] == [dropped_id, held_id]

    code, out, _ = invoke("outbox", "approve", message_id)
    assert (code, out.strip()) == (0, f"reply {held_id}: approved; now queued")
    code, out, _ = invoke("outbox", "reject", str(dropped_id), "--reason", "v2 is coming")
    assert code == 0 and "now rejected" in out

    code, out, _ = invoke("outbox", "send", "--json")
    assert code == 0 and json.loads(out)["sent"] == [held_id]
    box = mailbox.Maildir(tmp_path / "data" / "outbox", create=False)
    assert [m["Message-ID"] for m in box] == [f"<{message_id}>"]

    code, out, _ = invoke("outbox", "show", str(held_id), "--json")
    shown = json.loads(out)
    assert shown["state"] == "sent" and shown["message"].startswith("From: lorelab")

    code, _, error = invoke("outbox", "retry", str(held_id))
    assert code == 1 and "never sent again" in str(error)
    code, _, error = invoke("outbox", "approve", "999")
    assert code == 1 and "no reply 999" in str(error)


def test_list_rejects_an_unknown_state(cli) -> None:  # noqa: ANN001
    invoke, _ = cli
    code, _, error = invoke("outbox", "list", "--state", "lost")
    assert code == 1 and "use one of" in str(error)


def test_report_settings_refuse_smtp_without_a_contact() -> None:
    settings = dataclasses.replace(ReportSettings(), mode="smtp")
    with pytest.raises(ValueError, match="contact is required"):
        settings.validate()
