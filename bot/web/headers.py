"""The security headers on every answer of the status site, and the CSP its pages satisfy.

The pages need no script, no font, no frame and no image from anywhere: their one stylesheet is
the inline <style> of base.html, allowed by a nonce made fresh for each request, and the plots
are inline SVG drawn with attributes, not styles. So the policy allows only that stylesheet,
images from the site itself (a browser's favicon request), and forms posting back to the site;
`frame-ancestors 'none'` and X-Frame-Options keep the site out of other sites' frames (no
clickjacking of the admin forms), and nosniff keeps a browser from reading the plain-text
config or the JSON as HTML.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def content_security_policy(nonce: str) -> str:
    """The policy of a page whose <style> elements carry `nonce`."""
    return "; ".join((
        "default-src 'none'",
        f"style-src 'nonce-{nonce}'",
        "img-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ))


def security_headers(nonce: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": content_security_policy(nonce),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
    }


class SecurityHeaders:
    """ASGI middleware: a fresh nonce in `request.state.csp_nonce` for the templates, and the
    headers on the answer, whatever route (or error handler) wrote it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        nonce = secrets.token_urlsafe(18)
        scope.setdefault("state", {})["csp_nonce"] = nonce
        extra = [(name.lower().encode(), value.encode())
                 for name, value in security_headers(nonce).items()]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in extra}
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message["headers"] = kept + extra
            await send(message)

        await self.app(scope, receive, send_with_headers)
