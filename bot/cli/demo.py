"""`lorelab demo`: run the main job on the embedded default and show the result."""

from __future__ import annotations

import typer

from bot.cli.context import emit_json, stdout_console
from bot.config import data_dir


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(as_json: bool = typer.Option(False, "--json", help="Print the series as JSON.")) -> None:
    """Make a series thread with git, ingest it and the seed mails, and show the series."""
    import sqlalchemy as sa

    from bot.cli.query import print_series_table, quarantine_rows
    from bot.db.models import Message
    from bot.db.session import Database
    from bot.demo.run import run_demo
    from bot.series.views import all_series

    result = run_demo(data_dir())
    db = Database(result.database_url)
    with db.session() as session:
        series = all_series(session)
        quarantined = quarantine_rows(session)
        kinds = dict(
            session.execute(sa.select(Message.kind, sa.func.count()).group_by(Message.kind)).all()
        )
    if as_json:
        emit_json({"ingest": result.summary.to_dict(), "kinds": kinds, "series": series})
        return
    out = stdout_console()
    s = result.summary
    out.print(
        f"ingested {s.read} mails into {result.database_url}: stored {s.stored}, "
        f"quarantined {s.quarantined}"
    )
    out.print("stored: " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())))
    print_series_table(series)
    for q in quarantined:
        out.print(f"[yellow]quarantined[/] {q['source']}: {q['reason']}")
    if quarantined:
        out.print("(`lorelab claims FILE` still reads such excerpts for their benchmark claims)")
    out.print(
        f"explore: LORELAB_DATABASE_URL={result.database_url} lorelab series show 1",
        soft_wrap=True,
    )
