"""Work on a kernel tree: apply a series in a worktree, build it in a sandbox, and the steps
(`apply`, `build-base`, `build-patched`) that record both."""
