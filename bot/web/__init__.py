"""The status site: server-rendered pages and a JSON API over the same read-side queries.

`create_app(settings)` (bot.web.app) builds the FastAPI app; `lorelab serve` runs it.
"""
