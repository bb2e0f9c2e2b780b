"""``chunkmark label``: real questions with exact evidence, from suggested passages.

:mod:`~chunkmark.label.pool` ranks passages for a question (several rankers over several
chunkings, fused and merged); :mod:`~chunkmark.label.store` keeps the labeled questions in the
folder's ``questions.jsonl``, checked as ``chunkmark datasets validate`` checks it;
:mod:`~chunkmark.label.queries` reads real queries from a file; :mod:`~chunkmark.label.server`
serves the page on 127.0.0.1. docs/label.md describes the whole.
"""
