"""What chunkmark's paid work costs, in one home below the components.

Every layer that prices something reads it from here (imports go down only):

- ``prices``: :class:`~chunkmark.costs.prices.Price`, what one LLM costs per million tokens
  (input, output, prompt-cache reads and writes);
- ``prompt_cache``: the providers' prompt-cache rules (price ratios, which prompts they cache);
- ``price_files``: reading and checking a price file, looking a model up by name;
- ``llm_prices`` and ``embedding_prices``: the shipped tables (``llm_prices.yaml``,
  ``embedding_prices.yaml``) with a user's ``--prices FILE`` on top;
- ``overrides``: an experiment file's ``prices:`` over both tables;
- ``meter``: the spending of a run that calls an LLM, held against ``--max-cost``;
- ``budget``: the errors of a cost limit, and dollars written for people (``usd``).
"""
