"""The lab controller's own programs: the runner supervisor of each board instance
(`rtgate lab runner`), its per-board state and environment file (`rtgate lab setup`), and
GitHub App authentication."""
