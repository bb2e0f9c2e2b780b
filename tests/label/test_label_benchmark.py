"""benchmarks/label_pool.py's measures on the demo set: what they compare can be compared."""

from __future__ import annotations

from benchmark_scripts import load_benchmark
from chunkmark.datasets import Dataset, Document, Question, load_demo
from chunkmark.label.pool import Pool
from chunkmark.spans import Span

CHUNKERS = ("sentences(n=2)", "recursive(size=128)")


def test_a_pair_of_lists_shows_at_least_what_its_better_half_shows() -> None:
    bench = load_benchmark("label_pool")
    demo = load_demo()
    found = bench.quality(Pool(demo.documents, None, CHUNKERS), demo)
    assert found["questions"] == len(demo.questions)
    shares = [found[k]["share"] for k in ("pool@5", "pool@10", "best list@5", "best list@10")]
    assert all(0 <= s <= 1 for s in shares)
    # a pair shows the first 5 of two lists: the best list at 5 plus another
    assert found["best pair (5 each)"]["share"] >= found["best list@5"]["share"]
    assert found["pool@10"]["share"] >= found["pool@5"]["share"]


def test_the_scripted_labeler_accepts_overlapping_suggestions_or_keeps_the_human_span() -> None:
    bench = load_benchmark("label_pool")
    demo = load_demo()
    pool = Pool(demo.documents, None, CHUNKERS)
    relabeled, counts = bench.relabeled(pool, demo)
    assert counts["accepted"] + counts["searched"] == sum(len(q.excerpts) for q in demo.questions)
    assert counts["accepted"] > 0
    for before, after in zip(demo.questions, relabeled.questions, strict=True):
        assert (before.id, before.doc_id) == (after.id, after.doc_id)
        suggested = {(p.start, p.end) for p in pool.suggest(before.text, before.doc_id, n=10)}
        for e in before.excerpts:  # every human excerpt lies inside what was marked
            assert any(s.start <= e.start and e.end <= s.end for s in after.excerpts) or any(
                s.start < e.end and e.start < s.end and (s.start, s.end) in suggested
                for s in after.excerpts
            )
        for s in after.excerpts:
            assert s.end <= len(demo.by_id[before.doc_id].text)


def test_a_disjoint_sample_drops_the_shared_documents_and_their_questions() -> None:
    from chunkmark.datasets import Dataset

    bench = load_benchmark("label_pool")
    demo = load_demo()
    shared = demo.questions[0].doc_id
    other = Dataset("other", tuple(d for d in demo.documents if d.id == shared), ())
    left = bench.disjoint(demo, other)
    assert shared not in {d.id for d in left.documents}
    assert len(left.documents) == len(demo.documents) - 1
    assert [q.id for q in left.questions] == [q.id for q in demo.questions if q.doc_id != shared]
    assert left.questions  # the demo asks of more than one document


def test_the_choice_keeps_to_the_text_limit_then_the_smallest_margin() -> None:
    bench = load_benchmark("label_pool")
    names = ["qmsum", "cuad"]  # targets 85% and 95%

    def row(qmsum: float, cuad: float, chars: float) -> dict[str, dict[str, float]]:
        return {"qmsum": {"share": qmsum, "chars": chars}, "cuad": {"share": cuad, "chars": chars}}

    table = {
        "base": row(0.73, 0.84, 1000),
        "shows too much": row(0.99, 0.99, 1000 * bench.MORE_TEXT + 1),
        "one set far behind": row(0.99, 0.80, 1100),  # margin 0.80 - 0.95 = -0.15
        "both a little behind": row(0.80, 0.90, 1200),  # margin -0.05 on both
        "same margin, more text": row(0.80, 0.92, 1250),
    }
    assert bench.choose(table, names, "base") == "both a little behind"
    del table["both a little behind"]
    assert bench.choose(table, names, "base") == "same margin, more text"
    # a looser limit lets the one that showed too much in
    assert bench.choose(table, names, "base", more_text=bench.MORE_TEXT + 0.01) == "shows too much"


def test_samples_of_several_seeds_join_with_each_document_and_question_once() -> None:
    from chunkmark.datasets import Dataset

    bench = load_benchmark("label_pool")
    demo = load_demo()
    first = demo.documents[0].id
    one = Dataset(
        "demo",
        demo.documents[:2],
        tuple(q for q in demo.questions if q.doc_id in {d.id for d in demo.documents[:2]}),
    )
    other = Dataset(
        "demo", demo.documents[1:], tuple(q for q in demo.questions if q.doc_id != first)
    )
    both = bench.joined([one, other])
    assert [d.id for d in both.documents] == [d.id for d in demo.documents]
    assert sorted(q.id for q in both.questions) == sorted(q.id for q in demo.questions)
    assert bench.joined([one]) is one


def test_every_tuning_grid_starts_from_its_base_and_names_each_pool_once() -> None:
    from chunkmark.label.pool import DEFAULT_CHUNKERS

    bench = load_benchmark("label_pool")
    for grid in ("first", "passages", "weights", "opening"):
        configs = bench.tune_configs(grid)
        assert len({c["label"] for c in configs}) == len(configs)
        base = configs[0]
        assert base["max_chars"] == 3000 and base["join"] is None and not base.get("opening")
        if grid != "first":  # the later grids start from the first grid's choice
            assert base["chunkers"] == DEFAULT_CHUNKERS and base["depth"] == 10
            assert base["weights"] == {"dense": 0.5} and base["rrf_k"] == 60


def test_the_tuning_table_scores_each_configuration_as_a_pool_with_its_settings() -> None:
    # --tune fuses every configuration from one deeper pool's rankings; a pool built with one
    # configuration's settings must find the same share and show the same text at 10
    bench = load_benchmark("label_pool")
    demo = _titled()
    tuned = bench.tune([demo], ["cuad"], None, "opening")  # "cuad": only its target is read
    assert tuned["choice"] in tuned["table"]
    picked = [c for c in tuned["configs"] if c["opening"] and c["join"] is not None][:1]
    picked += [c for c in tuned["configs"] if not c["opening"] and c["max_chars"] == 5000][:1]
    for config in picked:
        pool = Pool(
            demo.documents,
            None,
            config["chunkers"],
            config["rankers"],
            depth=config["depth"],
            max_chars=config["max_chars"],
            rrf_k=config["rrf_k"],
            weights=config["weights"],
            join=config["join"],
            opening=config["opening"],
            opening_at=config["opening_at"] or 1,
        )
        found = bench.quality(pool, demo)["pool@10"]
        row = tuned["table"][config["label"]]["cuad"]
        assert (row["share"], row["chars"]) == (found["share"], found["chars"])
    # the set is one where the opening matters: only it shows the title
    shares = {c["label"]: tuned["table"][c["label"]]["cuad"]["share"] for c in picked}
    assert shares[picked[0]["label"]] == 1.0 and shares[picked[1]["label"]] == 0.5


def _titled() -> Dataset:
    """Two long documents whose title only the opening shows: one question asks for it (its
    words are in a dozen clauses far from the title), one for a clause that BM25 finds."""
    words = ["valve", "hinge", "spring", "door", "pump", "gear", "belt", "seal", "oil", "fan"]
    documents, questions = [], []
    for n, title in enumerate(("ZEPHYR SUPPLY AGREEMENT", "QUORUM LICENCE DEED")):
        clauses = [
            f"Clause {i}: the {words[i % 10]} shall move the {words[(i * 3 + n) % 10]} "
            f"within {i} days."
            + (" The osprey crank is named here." if i >= 300 and i % 100 == 0 else "")
            for i in range(1500)
        ]
        body = " ".join(clauses)
        text = f"{title}\n\n{body} The kestrel lever is oiled monthly."
        doc_id = f"doc{n}"
        documents.append(Document(doc_id, text))
        clause = text.index("The kestrel lever")
        questions.append(
            Question(
                f"{doc_id}#title",
                "Where is the osprey crank named?",
                doc_id,
                (Span(0, len(title)),),
            )
        )
        questions.append(
            Question(
                f"{doc_id}#kestrel",
                "When is the kestrel lever oiled?",
                doc_id,
                (Span(clause, clause + 32),),
            )
        )
    return Dataset("titled", tuple(documents), tuple(questions))
