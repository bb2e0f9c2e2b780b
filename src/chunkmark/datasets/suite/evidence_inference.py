"""Evidence Inference 2.0 (DeYoung et al., BioNLP 2020; MIT; articles from the PubMed Central
open-access subset under their own licences): doctors' evidence for how an intervention compares
with a comparator on an outcome, in reports of randomised controlled trials.

Raw files (``annotations/``): ``prompts_merged.csv`` (``PromptID``, ``PMCID``, ``Outcome``,
``Intervention``, ``Comparator``), ``v2_annotations.csv`` (one row per annotator and evidence:
``UserID``, ``PromptID``, ``PMCID``, ``Valid Label``, ``Valid Reasoning``, ``Label``,
``Annotations`` (the evidence text), ``Label Code``, ``Evidence Start``, ``Evidence End``: end
exclusive, into the article's text), ``txt_files/PMC<PMCID>.txt`` and ``README.md`` (whose
"Incorrect" list names prompts that "should not be included").

- document ``PMC<PMCID>``: the article's text file, unchanged;
- question ``prompt-<PromptID>``, one per prompt of v2 (prompts outside v2 have no evidence):
  "With respect to OUTCOME, how did INTERVENTION compare with COMPARATOR?"; prompts the README
  flags as incorrect are dropped (``flagged incorrect by the set's authors``);
- its excerpts: the evidence of every annotator whose reasoning the verifier accepted
  (``Valid Reasoning``); rejected evidence is set aside and counted, and a prompt left with none
  is dropped (``no evidence accepted``). Where ``text[start:end]`` equals the annotation the span
  is the offsets (``exact``); otherwise the annotation text is located as
  :mod:`~chunkmark.datasets.suite.locate` does, several occurrences dropped as ambiguous.
  Overlapping evidence of several annotators is merged.
- metadata: ``label`` (the label most annotators gave, among those the verifier accepted, by
  ``Label Code``: "significantly increased", "significantly decreased" or "no significant
  difference"; absent on a tie), ``annotator_labels`` (every accepted annotator's label), ``intervention``,
  ``comparator``, ``outcome``, ``scope: "document"``. v2's splits are not among these files.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from chunkmark.datasets.model import Document
from chunkmark.datasets.suite.base import (
    DOCUMENT_SCOPE,
    Converted,
    Evidence,
    Sample,
    read_csv,
    read_text,
)
from chunkmark.datasets.suite.locate import Locator
from chunkmark.datasets.suite.pinned import SetInfo
from chunkmark.errors import DatasetError
from chunkmark.spans import Span

BASE = "annotations"
PROMPTS = f"{BASE}/prompts_merged.csv"
ANNOTATIONS = f"{BASE}/v2_annotations.csv"
README = f"{BASE}/README.md"
LABELS = {
    "1": "significantly increased",
    "-1": "significantly decreased",
    "0": "no significant difference",
}
REJECTED = "reasoning rejected by the set's verifier"


def flagged_incorrect(readme: str) -> set[str]:
    """The prompt ids listed under the README's "### Incorrect:" heading."""
    match = re.search(r"^###\s*Incorrect:\s*$(.*?)(?=^###|\Z)", readme, re.M | re.S)
    if match is None:
        raise DatasetError(
            f"the README ({README}) has no '### Incorrect:' list.",
            "Fetch the files again: chunkmark datasets download evidence_inference --force.",
        )
    return set(re.findall(r"\d+", match.group(1)))


def question_text(outcome: str, intervention: str, comparator: str) -> str:
    return (
        f"With respect to {outcome.strip()}, how did {intervention.strip()} compare with "
        f"{comparator.strip()}?"
    )


def convert(root: Path, files: Sequence[str], sample: Sample) -> Converted:
    incorrect = flagged_incorrect(read_text(root / README))
    prompts = {
        r["PromptID"].strip(): r
        for r in read_csv(
            root / PROMPTS, ("PromptID", "PMCID", "Outcome", "Intervention", "Comparator")
        )
    }
    needed = ("PromptID", "PMCID", "Valid Label", "Valid Reasoning", "Annotations", "Label Code")
    rows = read_csv(root / ANNOTATIONS, (*needed, "Evidence Start", "Evidence End"))
    by_article: dict[str, dict[str, list[dict[str, str]]]] = defaultdict(dict)
    for row in rows:
        article = f"PMC{row['PMCID'].strip()}"
        by_article[article].setdefault(row["PromptID"].strip(), []).append(row)
    articles = sorted(by_article, key=lambda a: int(a.removeprefix("PMC")))
    out = Converted(documents_in_source=len(articles), notes={"flagged_incorrect": len(incorrect)})
    for article in sample.pick(articles):
        relative = f"{BASE}/txt_files/{article}.txt"
        doc_id = article
        if relative not in files:
            for prompt in by_article[article]:
                out.tally.miss("document missing")
                out.tally.drop(f"prompt-{prompt}", doc_id, "document missing", relative)
            continue
        text = read_text(root / relative)
        out.documents.append(Document(doc_id, text))
        locator = Locator(text)
        for prompt, evidence in by_article[article].items():
            _prompt(prompt, evidence, prompts, incorrect, doc_id, locator, out)
    return out


def _prompt(
    prompt: str,
    evidence: list[dict[str, str]],
    prompts: dict[str, dict[str, str]],
    incorrect: set[str],
    doc_id: str,
    locator: Locator,
    out: Converted,
) -> None:
    qid = f"prompt-{prompt}"
    if prompt in incorrect:
        out.tally.drop(qid, doc_id, "flagged incorrect by the set's authors")
        return
    info = prompts.get(prompt)
    if info is None:
        raise DatasetError(
            f"{ANNOTATIONS}: prompt {prompt} is not in {PROMPTS}.",
            "Fetch the files again: chunkmark datasets download evidence_inference --force.",
        )
    accepted = [r for r in evidence if r["Valid Reasoning"].strip() == "True"]
    out.tally.set_aside(REJECTED, len(evidence) - len(accepted))
    if not accepted:
        out.tally.drop(qid, doc_id, "no evidence accepted")
        return
    text = locator.document
    placed = Evidence(out.tally)
    for row in accepted:
        annotation = row["Annotations"]
        start, end = int(row["Evidence Start"]), int(row["Evidence End"])
        if 0 <= start < end <= len(text) and text[start:end] == annotation and annotation.strip():
            placed.spans.append(Span(start, end))
            out.tally.place("exact")
            continue
        placed.add(locator.locate(annotation, many="drop"), f"offsets {start}-{end}")
    if placed.dropped(qid, doc_id):
        return
    votes = Counter(
        LABELS.get(r["Label Code"].strip(), r["Label Code"])
        for r in evidence
        if r["Valid Label"].strip() == "True"
    )
    metadata: dict[str, object] = {}
    ranked = votes.most_common()
    if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        metadata["label"] = ranked[0][0]
    metadata["annotator_labels"] = [
        LABELS.get(r["Label Code"].strip(), r["Label Code"])
        for r in evidence
        if r["Valid Label"].strip() == "True"
    ]
    metadata.update(
        intervention=info["Intervention"].strip(),
        comparator=info["Comparator"].strip(),
        outcome=info["Outcome"].strip(),
        scope=DOCUMENT_SCOPE,
    )
    question = question_text(info["Outcome"], info["Intervention"], info["Comparator"])
    out.keep(qid, question, doc_id, placed.spans, metadata)


EVIDENCE_INFERENCE = SetInfo(
    name="evidence_inference",
    title="Evidence Inference 2.0",
    description="Evidence Inference 2.0: 915 clinical-trial reports, 2,444 prompts with "
    "doctor-marked evidence offsets (MIT).",
    licence="MIT (repository); each article carries its own PMC open-access licence",
    homepage="https://github.com/jayded/evidence-inference",
    convert=convert,
    docs=12,
    scope=DOCUMENT_SCOPE,
)
