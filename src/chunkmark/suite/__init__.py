"""The suite: one grid over many sets (``chunkmark suite run``) and the leaderboard read from
its folder (:mod:`chunkmark.suite.leaderboard`, ``chunkmark suite leaderboard``)."""
