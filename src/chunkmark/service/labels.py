"""A labeling folder's questions to and from other labeling tools (Label Studio, Argilla), as
``chunkmark label --import-...`` and ``--export-...`` do it: each imported span checked and saved
as the labeling page saves it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def interchange(
    tool: str, folder: Path, max_chars: int, source: Path | None, target: Path | None, say: Any
) -> None:
    """Import an export of ``tool`` (label-studio, argilla) into the folder's questions, or
    export them; ``say`` hears what was done."""
    from chunkmark.errors import ChunkmarkError
    from chunkmark.files import write_bytes_atomic
    from chunkmark.label import interop
    from chunkmark.label.store import QuestionStore, open_documents

    studio = tool == "label-studio"
    read = interop.from_label_studio if studio else interop.from_argilla
    write = interop.to_label_studio if studio else interop.to_argilla
    documents = open_documents(folder, max_chars)
    store = QuestionStore(folder, documents)
    texts = {d.id: d.text for d in documents}
    if source is not None:
        try:
            exported = json.loads(source.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ChunkmarkError(
                f"{source}: cannot be read as JSON ({exc}).",
                "Export the Label Studio project as JSON (not JSON-MIN or CSV)."
                if studio
                else "Export the records with dataset.records.to_json(path).",
            ) from None
        taken = {q["id"] for q in store.questions()}
        imported = read(exported, texts, str(source))
        for q in imported:
            spans = [(e["start"], e["end"]) for e in q["excerpts"]]
            qid = q["id"] if q["id"] not in taken else None
            store.save(q["question"], q["doc_id"], spans, qid=qid, metadata={"from": tool})
        say(f"imported {len(imported)} questions from {source}")
    if target is not None:
        data = write(store.questions(), texts)
        write_bytes_atomic(target, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode())
        kind = "Label Studio tasks" if studio else "Argilla records"
        say(f"wrote {len(data)} {kind} to {target}")
