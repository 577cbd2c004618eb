"""Replies on the list: composing them (pure) and delivering each exactly once.

Composition (no I/O): `context` and `results` hold the inputs as plain dataclasses; `compose`
does headers, threading and recipients; `text` wraps prose and keeps tables; one module per
reply kind (`benchmark_reply`, `failure_reply`, `command_reply`) with `tables` and `claim_view`
for the benchmark reply's parts. Every composer returns a `compose.ComposedReply`.

Delivery (I/O at the edges): `outbox` stores each reply with its Message-ID before anything is
sent and holds the moderation actions; `delivery` sends what is due through a `transport`
(`maildir` by default, `smtp` when deployed); `policy` decides what may go out (allow-listed
lists, opt-outs, rate limits, moderation); `settings` is the [report] configuration section.
"""
