"""Relation evaluation for Graph-RAG: gold relations over a dataset, per-chunk extraction,
entity matching and relation metrics (see docs/relations.md)."""
