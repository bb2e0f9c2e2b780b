"""Datasets from a user's own documents: import documents into a corpus, generate questions with
exact excerpts by LLM, filter weak and repeated questions, inspect the set.

Modules: ``importing`` (documents in, corpus out), ``generate`` (questions with excerpts: the
entry points, over ``options``, ``corpus``, ``plan``, ``prompt``, ``answers``, ``output`` and
``run``), ``excerpts`` (locating an LLM's passages in the text), ``filter`` and ``inspect``.
"""
