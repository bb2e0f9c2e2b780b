"""The benchmark suite: one grid over many sets (``run``: ``chunkmark suite run``) and the
leaderboard that reads the suite folder back (``leaderboard``: ``chunkmark suite leaderboard``)."""
