"""The harness every board shares: a scenario's loads and cyclictest run here, the plan, the
run environment and the result assembled (`rtgate bench`'s engine is rtgate.board.localbench;
every board driver reuses these pieces). Below board/ and trace/: it imports neither."""
