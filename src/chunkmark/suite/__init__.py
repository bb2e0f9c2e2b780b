"""The benchmark suite: one grid over many sets (``chunkmark suite run``) and the leaderboard
that reads it back."""
