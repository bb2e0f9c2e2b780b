"""Auditing collections that already live in a vector store (``chunkmark audit``), and exporting
a run's cell into one (``chunkmark export``).

:func:`~chunkmark.audit.collection.audit` scores a collection's stored chunks and vectors with
the same metrics, intervals and files as ``chunkmark run``, by exact search and by the store's
own search; :func:`~chunkmark.audit.export.export` writes a finished cell's chunks and cached
vectors into a new collection. Stores are in :mod:`chunkmark.audit.stores`, placement of chunk
texts in :mod:`chunkmark.audit.placement`.
"""
