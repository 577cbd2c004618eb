"""`lorelab serve`: the status pages and the JSON API (bot.web), served by uvicorn.

    lorelab serve [--host 127.0.0.1] [--port 8080]

Defaults come from [web] host and port. Pages and the API are read-only; admin actions need
[web] admin_token (or LORELAB_WEB_ADMIN_TOKEN) and are disabled without it. With nothing of the
user's to serve (no config file, no [database] url, and no mail stored in the default database:
`lorelab outbox list` makes it, empty) and a `lorelab demo` run, it serves the demo's database,
and says so.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import typer

from bot.cli import context, terminal
from bot.cli.context import UserError, settings
from bot.cli.database import open_database
from bot.config import Settings, data_dir


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)


def serve_command(
    host: str = typer.Option(None, "--host", help="Address to listen on (default: web.host)."),
    port: int = typer.Option(None, "--port", "-p", help="Port (default: web.port)."),
) -> None:
    """Serve the status pages and the JSON API until interrupted."""
    import uvicorn

    from bot.web.app import create_app

    config = settings()
    demo = _demo_config(config)
    if demo is not None:
        context.CONFIG_PATH = str(demo)  # as `lorelab -c DEMO serve` would read it
        config = settings()
        terminal.stderr().print(f"lorelab: no config or database of your own yet: serving the "
                                f"demo's ({config.database.url}); `lorelab init` writes a "
                                "config", markup=False)
    host = host or config.web.host
    port = port or config.web.port
    try:  # uvicorn would only log this and exit; say what to do instead
        socket.create_server((host, port)).close()
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}; "
                        "choose another --port or --host") from None
    app = create_app(config, open_database())
    admin = "enabled" if config.web.admin_token else "disabled (no [web] admin_token)"
    terminal.stderr().print(f"lorelab: serving http://{host}:{port}/ (API: /api/, schema: "
                            f"/openapi.json); admin actions {admin}", markup=False)
    uvicorn.run(app, host=host, port=port, log_level="info")


def _demo_config(config: Settings) -> Path | None:
    """The settings `lorelab demo` left (bot/demo/run.py: data_dir/demo/config.toml), when
    nothing of the user's is configured or stored to serve instead."""
    demo = data_dir() / "demo" / "config.toml"
    own_database = Path(config.database.resolved_url().removeprefix("sqlite:///"))
    if config.source is None and not config.database.url and not _holds_mail(own_database) \
            and demo.is_file():
        return demo
    return None


def _holds_mail(path: Path) -> bool:
    """Whether the SQLite file at `path` has stored any mail (read-only; a file that is not
    lorelab's, or is missing, holds none)."""
    import sqlite3

    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT 1 FROM messages LIMIT 1").fetchone() is not None
    except sqlite3.Error:
        return False
