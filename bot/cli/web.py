"""`lorelab serve`: the status pages and the JSON API (bot.web), served by uvicorn.

    lorelab serve [--host 127.0.0.1] [--port 8080]

Defaults come from [web] host and port. Pages and the API are read-only; admin actions need
[web] admin_token (or LORELAB_WEB_ADMIN_TOKEN) and are disabled without it.
"""

from __future__ import annotations

import socket

import typer

from bot.cli.context import UserError, console, settings
from bot.cli.database import open_database


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
    host = host or config.web.host
    port = port or config.web.port
    try:  # uvicorn would only log this and exit; say what to do instead
        socket.create_server((host, port)).close()
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}; "
                        "choose another --port or --host") from None
    app = create_app(config, open_database())
    admin = "enabled" if config.web.admin_token else "disabled (no [web] admin_token)"
    console.print(f"lorelab: serving http://{host}:{port}/ (API: /api/, schema: /openapi.json); "
                  f"admin actions {admin}", markup=False)
    uvicorn.run(app, host=host, port=port, log_level="info")
