"""The [web] configuration section: where `lorelab serve` listens and who may act.

Wired into `bot.config.Settings` as `settings.web`; every key can also be set as
`LORELAB_WEB_<KEY>`. Pages and the JSON API are read-only for everyone; admin actions (approve
a reply, retest or cancel a run) need `admin_token`, and are disabled while it is empty.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class WebSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    # Where the site is reached from outside, e.g. https://lorelab.example.org (for links).
    base_url: str = ""
    # The secret admin actions need (HTML forms: the token field; API: Authorization: Bearer).
    admin_token: str = ""
