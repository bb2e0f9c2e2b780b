"""``chunkmark relations prepare``: Re-DocRED into a relation set with exact spans."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from chunkmark.cli.relations import register
from chunkmark.datasets import download as downloads
from chunkmark.datasets.jsonl import load_jsonl
from chunkmark.errors import ConfigError, DatasetError
from chunkmark.paths import CACHE_DIR_ENV
from chunkmark.relations.model import RelationSet, load_relation_set
from chunkmark.relations.redocred import (
    check_span,
    choose_documents,
    detokenise,
    ensure_redocred,
    prepare_redocred,
    read_redocred,
    sentence_runs,
    smallest_window,
    surface,
)
from chunkmark.spans import Span

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared")).resolve()
FILES = ("documents.jsonl", "questions.jsonl", "entities.jsonl", "relations.jsonl")
REL_INFO = {"P17": "country", "P27": "country of citizenship", "P577": "publication date"}


@pytest.fixture(scope="session")
def redocred_file() -> Path:
    path = SHARED / "datasets" / "redocred" / "test_revised.json"
    if not path.exists():
        pytest.skip(f"Re-DocRED not found at {path} (set CHUNKMARK_SHARED_DIR)")
    return path


@pytest.fixture(autouse=True)
def _empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))


def text_of(*sentences: str) -> str:
    return detokenise([s.split(" ") for s in sentences]).text


def mention(sent_id: int, start: int, end: int, kind: str = "LOC") -> dict[str, Any]:
    return {"name": "x", "sent_id": sent_id, "pos": [start, end], "type": kind}


def tiny_documents() -> list[dict[str, Any]]:
    """Three small documents in Re-DocRED's layout."""
    alpha = {
        "title": "Alpha",
        "sents": [
            ["Anna", "Berg", "was", "born", "in", "Oslo", ",", "Norway", "."],
            ["Berg", "'s", "album", "(", "2010", ")", "sold", "well", "."],
            ["It", "was", "praised", "."],
            ["Oslo", "is", "big", "."],
        ],
        "vertexSet": [
            [mention(0, 0, 2, "PER"), mention(1, 0, 1, "PER"), mention(1, 0, 1, "ORG")],
            [mention(0, 5, 6), mention(3, 0, 1)],
            [mention(0, 7, 8), mention(0, 7, 8)],
            [mention(1, 4, 5, "TIME")],
        ],
        "labels": [
            {"h": 0, "t": 2, "r": "P27", "evidence": [0]},
            {"h": 1, "t": 2, "r": "P17", "evidence": [3, 0, 1]},
            {"h": 0, "t": 3, "r": "P577", "evidence": []},
            {"h": 0, "t": 2, "r": "P27", "evidence": [0, 1]},  # repeats label 0
            {"h": 1, "t": 1, "r": "P17", "evidence": []},  # head is tail
        ],
    }
    beta = {
        "title": "Beta",
        "sents": [["Rome", "is", "in", "Italy", "."], ["Italy", "is", "old", "."]],
        "vertexSet": [[mention(0, 0, 1)], [mention(0, 3, 4), mention(1, 0, 1)]],
        "labels": [{"h": 0, "t": 1, "r": "P17", "evidence": []}],
    }
    gamma = {
        "title": "Gamma",
        "sents": [["Lyon", "is", "French", "."], ["So", "it", "is", "."], ["France", "."]],
        "vertexSet": [[mention(0, 0, 1)], [mention(2, 0, 1)]],
        "labels": [{"h": 0, "t": 1, "r": "P17", "evidence": []}],
    }
    return [alpha, beta, gamma]


def write_source(folder: Path, documents: object, rel_info: object = REL_INFO) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "test_revised.json"
    path.write_text(json.dumps(documents), encoding="utf-8")
    (folder / "rel_info.json").write_text(json.dumps(rel_info), encoding="utf-8")
    return path


def prepared_tiny(tmp_path: Path, **options: Any) -> RelationSet:
    source = write_source(tmp_path / "src", tiny_documents())
    relation_set, _ = prepare_redocred(source, tmp_path / "out", **options)
    return relation_set


def assert_spans_exact(relation_set: RelationSet) -> None:
    """Every mention reads as an alias, every excerpt is its relation's support."""
    texts = {d.id: d.text for d in relation_set.dataset.documents}
    for entity in relation_set.entities.values():
        assert entity.mentions
        for span in entity.mentions:
            piece = texts[entity.doc_id][span.start : span.end]
            assert piece in entity.aliases
            assert piece == piece.strip() and piece
    questions = {q.id: q for q in relation_set.dataset.questions}
    for relation in relation_set.relations:
        assert questions[relation.id].excerpts == relation.support
        for span in relation.support:
            piece = texts[relation.doc_id][span.start : span.end]
            assert piece and piece == piece.strip()


# --- detokenisation -----------------------------------------------------------------------------


def test_every_token_span_reads_the_token() -> None:
    sents = [
        ["Rihanna", "'s", "album", "Loud", "(", "2010", ")", "sold", "$", "5", "million", "."],
        ["It", "did", "n't", "flop", ";", "fans", "said", '"', "wow", '"', "!"],
    ]
    detok = detokenise(sents)
    assert detok.text == (
        "Rihanna's album Loud (2010) sold $5 million. It didn't flop; fans said \"wow\"!"
    )
    for tokens, spans in zip(sents, detok.tokens, strict=True):
        for token, span in zip(tokens, spans, strict=True):
            assert detok.text[span.start : span.end] == token
    assert [detok.text[s.start : s.end] for s in detok.sentences] == [
        "Rihanna's album Loud (2010) sold $5 million.",
        'It didn\'t flop; fans said "wow"!',
    ]


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ("a , b . c ; d : e ! f ? g", "a, b. c; d: e! f? g"),
        ("[ x ] { y } 84 % # 1", "[x] {y} 84% #1"),
        (
            "she ca n't and we 're sure they 've gone , I 'm told",
            "she can't and we're sure they've gone, I'm told",
        ),
        ("the country ’s largest", "the country’s largest"),
        ("step - daughter and PC / Macintosh", "step-daughter and PC/Macintosh"),
        ("Pla ( 1903 – 1999 ) and Jammu – Baramulla", "Pla (1903–1999) and Jammu – Baramulla"),
        ("Bush War — also called", "Bush War — also called"),
        ("length 31.7 \u00a0 km", "length 31.7\u00a0km"),
        ('named " Hacker " who', 'named "Hacker" who'),
        ('" Coco " felt " good', '"Coco" felt" good'),
        ("The Simpsons ' third season", "The Simpsons' third season"),
        ("the ' executive agreement ' in", "the 'executive agreement' in"),
        ("in “ Amaryllis ” villa", "in “Amaryllis” villa"),
        ("-LRB- a -RRB- -LSB- b -RSB- `` c ''", "(a) [b] “c”"),
        ("Saint Malo (; also known as", "Saint Malo (; also known as"),
    ],
)
def test_punctuation_rules(tokens: str, expected: str) -> None:
    assert text_of(tokens) == expected


def test_a_quote_opening_a_sentence_opens() -> None:
    assert text_of('" Hello', "there .") == '"Hello there.'


def test_ptb_tokens_get_their_surface_spans() -> None:
    detok = detokenise([["-LRB-", "a", "-RRB-"]])
    assert [detok.text[s.start : s.end] for s in detok.tokens[0]] == ["(", "a", ")"]
    assert surface("-LRB-") == "(" and surface("word") == "word"


def test_sentences_are_joined_by_one_space() -> None:
    detok = detokenise([["A", "."], ["(", "B", ")"], ["C", "."]])
    assert detok.text == "A. (B) C."
    assert detok.sentences == (Span(0, 2), Span(3, 6), Span(7, 9))


def test_check_span_raises_on_a_wrong_span() -> None:
    check_span("a b, c", Span(0, 4), ["a", "b", ","], ValueError)
    with pytest.raises(ValueError, match=r"\[0, 3\) reads 'a b'"):
        check_span("a b, c", Span(0, 3), ["a", "b", ","], ValueError)
    with pytest.raises(ValueError, match="reads ' b'"):
        check_span("a b, c", Span(1, 3), ["b"], ValueError)


# --- support spans ------------------------------------------------------------------------------


def test_evidence_runs_merge_consecutive_sentences() -> None:
    assert sentence_runs([3, 1, 2, 5, 5, 7]) == [(1, 3), (5, 5), (7, 7)]
    assert sentence_runs([0]) == [(0, 0)]


def test_smallest_window_prefers_fewest_sentences_then_earliest() -> None:
    assert smallest_window({0, 4}, {2}) == (0, 2)  # (0, 2) and (2, 4) tie on size
    assert smallest_window({1, 6}, {3, 5}) == (5, 6)
    assert smallest_window({1, 3}, {3}) == (3, 3)
    assert smallest_window({2}, {0, 4}) == (0, 2)


# --- building a set -----------------------------------------------------------------------------


def test_tiny_set_layout_ids_and_counts(tmp_path: Path) -> None:
    source = write_source(tmp_path / "src", tiny_documents())
    relation_set, stats = prepare_redocred(source, tmp_path / "out", docs_per_corpus=2)
    order = choose_documents(3, None, 0)
    documents = relation_set.dataset.documents
    assert [d.id for d in documents] == ["redocred-00", "redocred-01"]
    titles = ["Alpha", "Beta", "Gamma"]
    first = documents[0].text
    assert first.startswith(f"{titles[order[0]]}\n\n")
    assert f"\n\n{titles[order[1]]}\n\n" in first
    assert documents[1].text.startswith(f"{titles[order[2]]}\n\n")
    assert stats.documents == 3 and stats.corpus_files == 2 and stats.sentences == 9
    assert stats.entities == 8 and stats.mentions == 11 and stats.mentions_merged == 2
    assert stats.mentions_checked == 13
    assert stats.relations == 5 and stats.evidence == 2 and stats.window == 3
    assert stats.same_sentence == 4 and stats.cross_sentence == 1
    assert stats.duplicates_skipped == 1 and stats.self_relations_skipped == 1
    assert_spans_exact(relation_set)


def test_entities_aliases_types_and_mentions(tmp_path: Path) -> None:
    relation_set = prepared_tiny(tmp_path)
    anna = relation_set.entities["d000e0"]
    text = relation_set.dataset.by_id[anna.doc_id].text
    assert anna.aliases == ("Anna Berg", "Berg")  # distinct, in text order
    assert anna.type == "PER"  # the most common mention type
    assert len(anna.mentions) == 2  # the repeated span is kept once
    assert [text[s.start : s.end] for s in anna.mentions] == ["Anna Berg", "Berg"]
    norway = relation_set.entities["d000e2"]
    assert norway.aliases == ("Norway",) and len(norway.mentions) == 1
    assert relation_set.entities["d000e3"].aliases == ("2010",)


def test_relations_support_and_questions(tmp_path: Path) -> None:
    relation_set = prepared_tiny(tmp_path)
    by_id = relation_set.by_id
    assert sorted(by_id) == ["d000r0", "d000r1", "d000r2", "d001r0", "d002r0"]
    text = relation_set.dataset.by_id[by_id["d000r0"].doc_id].text

    def support(relation_id: str) -> list[str]:
        return [text[s.start : s.end] for s in by_id[relation_id].support]

    citizen = by_id["d000r0"]
    assert (citizen.head, citizen.tail, citizen.property_id) == ("d000e0", "d000e2", "P27")
    assert citizen.label == "country of citizenship" and citizen.support_kind == "evidence"
    assert support("d000r0") == ["Anna Berg was born in Oslo, Norway."]
    assert citizen.same_sentence
    # evidence [3, 0, 1]: sentences 0-1 merged into one span, 3 on its own
    assert support("d000r1") == [
        "Anna Berg was born in Oslo, Norway. Berg's album (2010) sold well.",
        "Oslo is big.",
    ]
    # no evidence: the one sentence holding "Berg" and "2010"
    assert by_id["d000r2"].support_kind == "window"
    assert support("d000r2") == ["Berg's album (2010) sold well."]
    assert by_id["d000r2"].same_sentence
    questions = {q.id: q for q in relation_set.dataset.questions}
    assert questions["d000r0"].text == "What is the country of citizenship of Anna Berg?"
    assert questions["d000r1"].text == "What is the country of Oslo?"
    assert questions["d000r0"].doc_id == citizen.doc_id


def test_window_support_spans_sentences_across(tmp_path: Path) -> None:
    relation_set = prepared_tiny(tmp_path)
    beta, gamma = relation_set.by_id["d001r0"], relation_set.by_id["d002r0"]
    text = relation_set.dataset.by_id[gamma.doc_id].text
    assert beta.support_kind == "window" and beta.same_sentence  # Rome and Italy in sentence 0
    assert not gamma.same_sentence
    assert [text[s.start : s.end] for s in gamma.support] == ["Lyon is French. So it is. France."]


def test_written_folder_loads_as_a_dataset(tmp_path: Path) -> None:
    relation_set = prepared_tiny(tmp_path)
    dataset = load_jsonl(tmp_path / "out")
    assert dataset.fingerprint == relation_set.dataset.fingerprint
    assert len(dataset.questions) == len(relation_set.relations)


# --- bad input ----------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"absent\.json does not exist.*--redocred"):
        read_redocred(tmp_path / "absent.json")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'[{"title": "\xff"}]')
    with pytest.raises(DatasetError, match=r"bad\.json is not UTF-8 \(byte 12\)"):
        read_redocred(path)


def test_malformed_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"title": "A",', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.json is not valid JSON .* line 1"):
        read_redocred(path)


def test_not_a_list(tmp_path: Path) -> None:
    path = write_source(tmp_path, {"title": "A"})
    with pytest.raises(DatasetError, match="holds a JSON object, not a list of documents"):
        read_redocred(path)


def test_document_missing_keys_names_file_and_index(tmp_path: Path) -> None:
    documents = tiny_documents()
    del documents[1]["labels"]
    path = write_source(tmp_path, documents)
    with pytest.raises(DatasetError) as caught:
        read_redocred(path)
    message = str(caught.value)
    assert f"{path}, document 1 ('Beta'): lacks the key(s) labels." in message
    assert "Fix: Use a Re-DocRED split" in message


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d["vertexSet"][0][0].update(pos=[0, 99]), "entity 0, mention 0: pos [0, 99]"),
        (lambda d: d["vertexSet"][1][0].update(sent_id=7), "entity 1, mention 0: sent_id 7"),
        (lambda d: d["vertexSet"].append([]), "entity 4 of vertexSet is not a non-empty list"),
        (lambda d: d["labels"][0].update(h=9), "label 0: h 9 is not an entity"),
        (lambda d: d["labels"][1].update(evidence=[8]), "label 1: evidence [8]"),
        (lambda d: d["labels"][2].pop("r"), "label 2 lacks the key(s) r"),
        (lambda d: d["sents"].append("word"), "sents is not a list of token lists"),
    ],
)
def test_bad_document_parts_name_the_document(tmp_path: Path, change: Any, problem: str) -> None:
    documents = tiny_documents()
    change(documents[0])
    path = write_source(tmp_path, documents)
    with pytest.raises(DatasetError, match=r"document 0 \('Alpha'\): ") as caught:
        read_redocred(path)
    assert problem in str(caught.value)


def test_unknown_property_names_the_rel_info_fix(tmp_path: Path) -> None:
    source = write_source(tmp_path / "src", tiny_documents(), {"P17": "country"})
    with pytest.raises(DatasetError, match=r"document 0 \('Alpha'\): property 'P27'.*--rel-info"):
        prepare_redocred(source, tmp_path / "out")


def test_missing_rel_info(tmp_path: Path) -> None:
    source = write_source(tmp_path / "src", tiny_documents())
    (tmp_path / "src" / "rel_info.json").unlink()
    with pytest.raises(DatasetError, match=r"rel_info\.json does not exist.*--rel-info"):
        prepare_redocred(source, tmp_path / "out")


def test_too_many_docs(tmp_path: Path) -> None:
    source = write_source(tmp_path / "src", tiny_documents())
    with pytest.raises(ConfigError, match="--docs 4 is not between 1 and the 3 documents"):
        prepare_redocred(source, tmp_path / "out", docs=4)


def test_offline_download_names_redocred(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args: object, **kwargs: object) -> object:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(DatasetError, match=r"could not reach .*test_revised\.json.*--redocred"):
        ensure_redocred()


def test_download_refuses_a_changed_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(downloads, "fetch_url", lambda url, manual, env: b"changed")
    with pytest.raises(DatasetError, match=r"not the pinned .*--redocred FILE"):
        ensure_redocred()


def test_download_caches_verified_files(
    redocred_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched: list[str] = []

    def fetch(url: str, manual: str, env: str) -> bytes:
        fetched.append(url)
        return (redocred_file.parent / url.rsplit("/", 1)[1]).read_bytes()

    monkeypatch.setattr(downloads, "fetch_url", fetch)
    path = ensure_redocred()
    assert path.read_bytes() == redocred_file.read_bytes()
    assert [u.rsplit("/", 2)[1:] for u in fetched] == [
        ["data", "test_revised.json"],
        ["data", "rel_info.json"],
    ]
    assert ensure_redocred() == path and len(fetched) == 2  # cached: nothing fetched again


# --- the command --------------------------------------------------------------------------------


def run(*args: str) -> Result:
    app = typer.Typer()
    register(app)
    return CliRunner().invoke(app, ["relations", *args], env={"COLUMNS": "200"})


def test_register_returns_the_group() -> None:
    app = typer.Typer()
    group = register(app)

    @group.command("hello")
    def hello() -> None:
        typer.echo("hi")

    result = CliRunner().invoke(app, ["relations", "hello"])
    assert result.exit_code == 0 and result.output == "hi\n"


def test_cli_prepare_prints_counts(tmp_path: Path) -> None:
    source = write_source(tmp_path / "src", tiny_documents())
    result = run("prepare", "--redocred", str(source), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "corpus files" in result.output and "duplicate relations skipped" in result.output
    assert "checked every mention (13) and support span (6) against the text" in result.output
    assert load_relation_set(tmp_path / "out").by_id.keys() == {
        "d000r0",
        "d000r1",
        "d000r2",
        "d001r0",
        "d002r0",
    }


def test_cli_refuses_a_non_empty_out(tmp_path: Path) -> None:
    source = write_source(tmp_path / "src", tiny_documents())
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x", encoding="utf-8")
    result = run("prepare", "--redocred", str(source), "--out", str(tmp_path / "out"))
    assert isinstance(result.exception, DatasetError)
    assert "is not empty" in str(result.exception) and "--force" in str(result.exception)
    forced = run("prepare", "--redocred", str(source), "--out", str(tmp_path / "out"), "--force")
    assert forced.exit_code == 0, forced.output


def test_cli_bad_file_is_a_dataset_error(tmp_path: Path) -> None:
    result = run("prepare", "--redocred", str(tmp_path / "x.json"), "--out", str(tmp_path / "o"))
    assert isinstance(result.exception, DatasetError)


# --- the real data ------------------------------------------------------------------------------


@pytest.mark.integration
def test_sample_of_the_real_split(redocred_file: Path, tmp_path: Path) -> None:
    relation_set, stats = prepare_redocred(redocred_file, tmp_path / "a", docs=30, seed=0)
    loaded = load_relation_set(tmp_path / "a")
    assert loaded.relations == relation_set.relations
    assert stats.documents == 30 and stats.corpus_files == 2
    assert stats.relations == len(loaded.relations) == len(loaded.dataset.questions)
    assert stats.evidence + stats.window == stats.relations
    assert stats.same_sentence + stats.cross_sentence == stats.relations
    assert_spans_exact(loaded)
    # same seed, same bytes; another seed, another selection
    prepare_redocred(redocred_file, tmp_path / "b", docs=30, seed=0)
    for name in FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    other, _ = prepare_redocred(redocred_file, tmp_path / "c", docs=30, seed=1)

    def drawn(rs: RelationSet) -> set[str]:
        return {e.split("e")[0] for e in rs.entities}

    assert drawn(other) != drawn(relation_set)
    assert len(drawn(relation_set)) == 30


@pytest.mark.integration
def test_full_split_counts(redocred_file: Path, tmp_path: Path) -> None:
    relation_set, stats = prepare_redocred(redocred_file, tmp_path / "full")
    assert (stats.documents, stats.corpus_files, stats.sentences) == (500, 25, 3966)
    assert (stats.entities, stats.mentions, stats.mentions_merged) == (9779, 12950, 68)
    assert (stats.relations, stats.evidence, stats.window) == (17448, 7547, 9901)
    assert (stats.same_sentence, stats.cross_sentence) == (8156, 9292)
    assert stats.duplicates_skipped == stats.self_relations_skipped == 0
    assert stats.mentions_checked == 13018
    assert_spans_exact(relation_set)


@pytest.mark.integration
def test_cli_on_the_real_split(redocred_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "set"
    result = run("prepare", "--redocred", str(redocred_file), "--out", str(out), "--docs", "30")
    assert result.exit_code == 0, result.output
    assert "ok: checked every mention" in result.output
    assert len(load_relation_set(out).dataset.documents) == 2
