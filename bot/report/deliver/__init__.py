"""Delivering replies exactly once: the outbox every reply is stored in before anything is
sent, the policy that says when not to write, the transports (maildir, SMTP) and recovery."""
