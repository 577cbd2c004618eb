"""Helpers the tests share: the real servers they start and the paths they read."""
