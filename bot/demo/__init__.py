"""Generated but real list traffic (git trees, patch series, replies) for tests and the demo."""
