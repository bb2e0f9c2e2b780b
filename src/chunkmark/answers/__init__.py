"""Answer-level metrics: the LLM answers each question from what a cell retrieved, and the
answer is scored against reference answers (token F1, exact match, label accuracy) and,
optionally, by an LLM judge (``docs/answers.md``).

``scoring`` (SQuAD-style normalisation, F1, exact match, label parsing), ``prompt`` (the
versioned prompts), ``analysis`` (:class:`~chunkmark.answers.analysis.AnswerAnalysis`, the
analysis the runner carries when an experiment has ``answers:``), ``agreement`` (Kendall's tau
between span and answer rankings; the judge's agreement with the references) and ``plan`` (what
answering would ask and cost, for ``chunkmark plan`` and ``--max-cost``).
"""
