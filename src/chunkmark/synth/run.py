"""One run of :func:`chunkmark.synth.generate.generate`: the output folder checked and its
manifest written, the slots worked through (concurrently across documents, up to the options'
``concurrency`` or else the LLM client's; in order within one, each at most
:data:`~chunkmark.synth.options.MAX_ATTEMPTS` answers, a slot's corrections one after the
other), accepted questions written in plan order, and the report."""

from __future__ import annotations

import copy
import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkmark.costs.budget import BudgetReached
from chunkmark.costs.meter import CostMeter
from chunkmark.counters import LLMStats
from chunkmark.datasets import Document
from chunkmark.errors import LLMError
from chunkmark.files import write_bytes_atomic
from chunkmark.llm import LLM, BaseLLM, EmptyAnswerError
from chunkmark.llm.pool import workers_for
from chunkmark.synth import examples as steer
from chunkmark.synth import excerpts as ex
from chunkmark.synth.answers import (
    DUPLICATE,
    DUPLICATE_STAGES,
    EMPTY_ANSWER,
    REJECTIONS,
    SlotOutcome,
    duplicate_stage,
    judge,
    reject,
)
from chunkmark.synth.corpus import corpus_fingerprint
from chunkmark.synth.options import MAX_ATTEMPTS, GenerationOptions, SynthError
from chunkmark.synth.output import MANIFEST, Output, Written, written_of
from chunkmark.synth.plan import Slot, make_passage_plan, make_plan
from chunkmark.synth.prompt import (
    ANSWER_TOKENS,
    PROMPT_VERSION,
    Prompt,
    build_prompt,
    correction_prompt,
    is_cached,
    request_tokens,
)
from chunkmark.synth.specific import Share, examples_share, wants_specific
from chunkmark.version import __version__

GENERATOR = "chunkmark synth generate"
MANIFEST_FORMAT = 1
# After a duplicate, a slot's next answers are asked at this temperature, each with its own
# seed (the run's seed + RETRY_SEED_STEP x the attempt): at temperature 0 a model asked again
# tends to write the question it wrote before.
RETRY_TEMPERATURE = 0.8
RETRY_SEED_STEP = 1009
# The passage size of ``--excerpts given`` when neither the examples nor ``--evidence`` give one.
GIVEN_EVIDENCE = "passage"

Progress = Callable[[SlotOutcome], None]


@dataclass
class GenerationReport:
    """What a run did: the questions in the folder (``accepted``, of them ``resumed`` found
    from an earlier run), counts by stage, why fewer than asked were written, the LLM's work
    and the cost of this run."""

    out: Path
    requested: int
    accepted: int
    resumed: int
    counts: dict[str, int]
    documents: list[dict[str, Any]]
    stopped: str | None = None
    llm: LLMStats = field(default_factory=LLMStats)
    cost_usd: float | None = None
    document_filter: dict[str, Any] | None = None

    @property
    def complete(self) -> bool:
        return self.stopped is None

    def shortfall(self) -> list[str]:
        """Why fewer questions than asked were written, one reason a line (empty if none)."""
        missing = self.requested - self.accepted
        if missing <= 0:
            return []
        lines = [f"{missing} of {self.requested} questions were not written:"]
        skipped = self.counts.get("windows_skipped", 0)
        if skipped:
            why = ", ".join(
                f"{reason} {self.counts[reason]}"
                for reason in REJECTIONS
                if self.counts.get(reason)
            )
            lines.append(
                f"  {skipped} windows skipped after {MAX_ATTEMPTS} unusable answers "
                f"(rejected answers by reason: {why})"
            )
        pending = self.counts.get("not_attempted", 0)
        if pending:
            lines.append(f"  {pending} not attempted: {self.stopped or 'stopped'}")
        return lines


class Generation:
    """One run of :func:`~chunkmark.synth.generate.generate` (see its module docs); use that
    function."""

    def __init__(
        self,
        documents: Sequence[Document],
        sources: Sequence[Any],
        llm: LLM,
        out: Path,
        options: GenerationOptions,
        *,
        meter: CostMeter,
        progress: Progress | None = None,
        document_filter: dict[str, Any] | None = None,
    ) -> None:
        self.documents = list(documents)
        self.by_id = {d.id: d for d in documents}
        self.sources = list(sources)
        self.llm = llm
        self.out = out
        self.options = options
        self.concurrency = options.concurrency or workers_for(llm)
        self.meter = meter
        self.progress = progress
        self.plan = self._plan()
        self.pick, self.specific = self._resolve_pick()
        self.document_filter = document_filter
        self._variants: dict[int, LLM] = {}
        self.output = Output(out, options.layout, self.documents)
        self.written: dict[int, Written] = {}
        self.outcomes: dict[int, SlotOutcome] = {}
        # per slot, the examples its answers copied, as an earlier run of the folder recorded
        self.carried: dict[int, tuple[str, ...]] = {}
        self.stop_event = threading.Event()
        self.stopped: str | None = None
        self.error: LLMError | None = None
        self._normalised: dict[str, ex.NormalisedText] = {}
        self._lock = threading.Lock()
        self._width = max(4, len(str(options.questions - 1)))

    def _plan(self) -> list[Slot]:
        """The slots: windows for the LLM to find evidence in, or (``--excerpts given``) the
        passages themselves, sized like the examples' evidence (else ``--evidence``, else a
        paragraph: :data:`GIVEN_EVIDENCE`) and at most ``--window-chars`` long, the most of a
        document the LLM is shown for one question."""
        o = self.options
        if o.mode != "given":
            return make_plan(
                self.documents,
                o.questions,
                seed=o.seed,
                window_chars=o.window_chars,
                styles=o.styles,
                window_questions=o.window_questions,
            )
        size = o.evidence or GIVEN_EVIDENCE

        def length_of(doc_id: str, j: int) -> int:  # at most --window-chars
            drawn = steer.target_length(o.example_evidence, size, o.seed, f"{doc_id}#{j}")
            return min(drawn or 1, o.window_chars)

        return make_passage_plan(
            self.documents, o.questions, seed=o.seed, styles=o.styles, length_of=length_of
        )

    def _resolve_pick(self) -> tuple[str, Share | None]:
        """The pick used (``auto`` resolved: ``examples`` in the given mode when some example's
        evidence lies in this corpus, else ``first``) and, for ``examples``, how many of the
        examples single out their evidence in their documents; a SynthError when ``--pick
        examples`` finds none of them in this corpus."""
        o = self.options
        if o.mode != "given" or o.pick in ("first", "specific"):
            return ("first" if o.pick == "auto" else o.pick), None
        share = None
        if any(o.example_spans):
            texts = {d.id: d.text for d in self.documents}
            share = examples_share(o.examples, o.example_docs, o.example_spans, texts)
        if share is not None and share.located:
            return "examples", share
        if o.pick == "auto":
            return "first", None
        raise SynthError(
            "--pick examples found none of the examples' evidence in this corpus (no example "
            "names a document of it with an excerpt inside that document).",
            "Pass examples asked of these documents (doc_id and excerpt offsets, as chunkmark "
            "label writes them), or --pick first or specific.",
        )

    # settings and the manifest

    def settings(self) -> dict[str, Any]:
        """What must match for a rerun to continue this folder."""
        o = self.options
        return {
            "llm": self.llm.identity(),
            # the sampling temperature of first answers (retries after a duplicate use their own)
            "temperature": getattr(self.llm, "temperature", None),
            "prompt_version": PROMPT_VERSION,
            "seed": o.seed,
            "questions": o.questions,
            "window_chars": o.window_chars,
            "mode": o.mode,
            "styles": list(o.styles),
            "examples": list(o.examples),
            "example_evidence": list(o.example_evidence),
            "example_docs": list(o.example_docs),
            "evidence": o.evidence,
            "window_questions": o.window_questions,
            "filter_documents": o.filter_documents,
            "min_excerpt_chars": o.min_excerpt_chars,
            "json_schema": o.json_schema,
            "candidates": o.candidates if o.mode == "given" else 1,
            "pick": self.pick,
            "example_spans": [None if s is None else list(s) for s in o.example_spans],
            "max_attempts": MAX_ATTEMPTS,
            "layout": o.layout,
            "corpus": {
                "documents": len(self.documents),
                "characters": sum(len(d.text) for d in self.documents),
                "fingerprint": corpus_fingerprint(self.documents),
            },
        }

    def open(self) -> None:
        """Check the output folder (new, or one this same run started), write the documents if
        needed and read the questions already written."""
        settings = json.loads(json.dumps(self.settings()))
        path = self.out / MANIFEST
        if path.is_file():
            old = self._check_manifest(path, settings)
            self.carried = _copied_in(old)
        elif self.out.exists() and (not self.out.is_dir() or any(self.out.iterdir())):
            raise SynthError(
                f"{self.out} already exists and holds no manifest of a question generation.",
                "Pass a new or empty folder to --out.",
            )
        self.out.mkdir(parents=True, exist_ok=True)
        if not path.is_file():
            self.write_manifest()  # first, so that a folder this run started is known as such
        self.written = self.output.prepare()
        if any(slot >= len(self.plan) for slot in self.written):
            raise SynthError(
                f"{self.output.questions} holds questions of slots beyond this plan.",
                "Write to a new --out folder.",
            )
        self.write_manifest()

    def _check_manifest(self, path: Path, settings: dict[str, Any]) -> dict[str, Any]:
        """The manifest at ``path``, checked to be this generator's with these settings."""
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if not isinstance(old, dict) or old.get("generator") != GENERATOR:
            raise SynthError(
                f"{path} is not the manifest of a question generation.",
                "Pass a new or empty folder to --out.",
            )
        previous = old.get("settings", {})
        changed = sorted(
            k for k in set(previous) | set(settings) if previous.get(k) != settings.get(k)
        )
        if changed:
            raise SynthError(
                f"{self.out} holds questions generated with other settings "
                f"({', '.join(changed)} differ), so this run cannot continue it.",
                "Run the same command as before to continue it (same corpus, LLM, --questions, "
                "--seed, --window-chars, --excerpts, --style, --examples, --layout), or pass a "
                "new folder to --out.",
            )
        return old

    def write_manifest(self) -> None:
        """Write ``manifest.json`` (atomically) as things stand."""
        manifest = {
            "generator": GENERATOR,
            "format": MANIFEST_FORMAT,
            "chunkmark_version": __version__,
            "status": "complete" if self.finished() else "incomplete",
            "stopped": self.stopped,
            "settings": self.settings(),
            "sources": self.sources,
            "counts": self.counts(),
            "document_filter": self.document_filter,
            "documents": self.document_rows(),
            "plan": [self._plan_entry(slot) for slot in self.plan],
        }
        if self.specific is not None:  # --pick examples: the share the slots were drawn by
            manifest["examples_specific"] = {
                "specific": self.specific.specific,
                "located": self.specific.located,
            }
        text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
        write_bytes_atomic(self.out / MANIFEST, text.encode("utf-8"))

    def _plan_entry(self, slot: Slot) -> dict[str, Any]:
        return {
            "slot": slot.index,
            "doc_id": slot.doc_id,
            "window": [slot.start, slot.end],
            "style": slot.style,
            **({"part": [slot.part, slot.parts]} if slot.parts > 1 else {}),
            "status": self._status(slot.index),
            **({"copied": list(c)} if (c := self._copied_of(slot.index)) else {}),
            **(
                {"specific": wants_specific(self.specific, self.options.seed, slot.index)}
                if self.specific is not None
                else {}
            ),
        }

    def _copied_of(self, index: int) -> tuple[str, ...]:
        """The examples slot ``index``'s answers copied: from this run's outcome, else from
        the manifest of the run that wrote it."""
        outcome = self.outcomes.get(index)
        return outcome.copied if outcome is not None else self.carried.get(index, ())

    def _status(self, index: int) -> str:
        if index in self.written:
            return "accepted"
        if index in self.outcomes:
            return "skipped"
        return "pending"

    def finished(self) -> bool:
        return all(self._status(s.index) != "pending" for s in self.plan)

    def counts(self) -> dict[str, int]:
        """The counts of every stage over the whole plan (written and skipped slots)."""
        c: Counter[str] = Counter()
        for w in self.written.values():
            c["answers"] += w.attempts
            c.update(w.rejected)
            c["normalised"] += w.methods.count(ex.NORMALISED)
            c["ambiguous"] += sum(w.ambiguous)
        for o in self.outcomes.values():
            if not o.accepted:
                c["answers"] += o.attempts
                c.update(o.rejected)
        done = len(self.written) + sum(1 for o in self.outcomes.values() if not o.accepted)
        counts = {
            "requested": self.options.questions,
            "planned": len(self.plan),
            "answers": c["answers"],
            **{reason: c[reason] for reason in REJECTIONS},
            **{stage: c[stage] for stage in DUPLICATE_STAGES},
            # given mode: the candidate questions of the answers, and the duplicates among them
            # (passed over without a request when another candidate of the answer was new)
            "candidates": c["candidates"],
            "candidates_duplicate": c["candidates_duplicate"],
            "normalised": c["normalised"],
            "ambiguous": c["ambiguous"],
            "accepted": len(self.written),
            "windows_skipped": done - len(self.written),
            "not_attempted": len(self.plan) - done,
        }
        return counts

    def document_rows(self) -> list[dict[str, Any]]:
        """Per document: characters, exact share of the questions, quota (slots planned; within
        one of the share), accepted and skipped."""
        total = sum(len(d.text) for d in self.documents)
        rows: dict[str, dict[str, Any]] = {
            d.id: {
                "id": d.id,
                "characters": len(d.text),
                "share": round(self.options.questions * len(d.text) / total, 3),
                "quota": 0,
                "accepted": 0,
                "skipped": 0,
            }
            for d in self.documents
        }
        for slot in self.plan:
            row = rows[slot.doc_id]
            row["quota"] += 1
            status = self._status(slot.index)
            if status in ("accepted", "skipped"):
                row[status] += 1
        return list(rows.values())

    # running the slots

    def asked_before(self, slot: Slot) -> list[str]:
        """The questions accepted for earlier slots of the same document, in plan order
        (written, or finished and waiting for their turn to be written)."""
        asked = []
        for s in self.plan[: slot.index]:
            if s.doc_id != slot.doc_id:
                continue
            if s.index in self.written:
                asked.append(self.written[s.index].question)
            elif s.index in self.outcomes and self.outcomes[s.index].accepted:
                asked.append(self.outcomes[s.index].question)
        return asked

    def copied_before(self, slot: Slot) -> list[str]:
        """The examples the LLM asked again for earlier slots of the plan, of any document:
        withheld from this slot's prompts, since a small model that copied an example once
        copies it again wherever it is shown (slots still running are not counted; on a
        resumed run, the copies the manifest records for slots before the stop are)."""
        return [q for s in self.plan[: slot.index] for q in self._copied_of(s.index)]

    def run(self) -> None:
        """Work through the slots not yet written: concurrently across documents, in order
        within one, writing accepted questions in plan order."""
        todo = [s for s in self.plan if s.index not in self.written]
        pending = list(todo)
        busy: set[str] = set()
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        running: dict[Future[SlotOutcome], Slot] = {}
        try:
            while (pending and not self.stop_event.is_set()) or running:
                self._submit(pool, pending, running, busy)
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: running[f].index):
                    slot = running.pop(future)
                    busy.discard(slot.doc_id)
                    outcome = self._result(future)
                    if outcome is not None:
                        self._record(outcome)
                # the next slots start before the finished ones are written (each written
                # question is synced to disk), so no worker waits for the disk
                self._submit(pool, pending, running, busy)
                self._flush(todo, in_order=True)
        except BaseException:
            self.stop_event.set()  # Ctrl-C: start nothing more, wait for nothing
            raise
        finally:
            pool.shutdown(wait=not self.stop_event.is_set(), cancel_futures=True)
            self._flush(todo, in_order=False)

    def _submit(
        self,
        pool: ThreadPoolExecutor,
        pending: list[Slot],
        running: dict[Future[SlotOutcome], Slot],
        busy: set[str],
    ) -> None:
        """Start the next slots in plan order whose document has no slot running."""
        blocked: set[str] = set()
        for slot in list(pending):
            if self.stop_event.is_set() or len(running) >= self.concurrency:
                return
            if slot.doc_id in busy or slot.doc_id in blocked:
                blocked.add(slot.doc_id)
                continue
            pending.remove(slot)
            busy.add(slot.doc_id)
            asked = self.asked_before(slot)
            running[pool.submit(self.work, slot, asked)] = slot

    def _result(self, future: Future[SlotOutcome]) -> SlotOutcome | None:
        """The slot's outcome, or None (the slot stays pending) when the run stops."""
        try:
            return future.result()
        except _Stopping:
            pass
        except BudgetReached as exc:
            self._stop(exc.problem)
        except LLMError as exc:
            self._stop(str(exc))
            if self.error is None:
                self.error = exc
        return None

    def _stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason
        self.stop_event.set()

    def _record(self, outcome: SlotOutcome) -> None:
        self.outcomes[outcome.slot.index] = outcome
        if self.progress is not None:
            self.progress(outcome)

    def _flush(self, todo: Sequence[Slot], *, in_order: bool) -> None:
        """Write the accepted outcomes not yet written: the ones that continue the plan order
        (``in_order``), or every finished one (when the run stops)."""
        for slot in todo:
            if slot.index in self.written:
                continue
            outcome = self.outcomes.get(slot.index)
            if outcome is None:
                if in_order:
                    return
                continue
            if outcome.accepted:
                qid = f"q{slot.index:0{self._width}d}"
                line = self.output.line(outcome, qid, self.options.mode)
                self.output.append(line)
                self.written[slot.index] = written_of(outcome, line)

    def work(self, slot: Slot, asked: Sequence[str]) -> SlotOutcome:
        """Ask for one slot's question, at most :data:`MAX_ATTEMPTS` times; after a duplicate,
        the next answers come at :data:`RETRY_TEMPERATURE` with other seeds."""
        doc = self.by_id[slot.doc_id]
        o = self.options
        copied = self.copied_before(slot)  # example questions the LLM asked again
        prompt, evidence = self.prompt_for(slot, asked, withheld=copied)
        schema = prompt.schema if o.json_schema else None
        user = prompt.user
        rejected: Counter[str] = Counter()
        tried: list[tuple[str, str]] = []
        detail = ""
        llm = self.llm
        mine: list[str] = []
        for attempt in range(1, MAX_ATTEMPTS + 1):
            answer = self._ask(llm, prompt, user, schema)
            if answer is None:
                verdict = reject(EMPTY_ANSWER, "the answer was empty")
                answer = ""
            else:
                verdict = judge(
                    answer,
                    doc,
                    slot,
                    prompt,
                    mode=o.mode,
                    asked=asked,
                    min_chars=o.min_excerpt_chars,
                    normalised=self._normalised_text(doc),
                    examples=o.examples,
                    evidence_chars=evidence,
                    pick=self.pick,
                    specific=self.specific is not None
                    and wants_specific(self.specific, o.seed, slot.index),
                )
            looked_at = verdict.passed_over or (verdict,)
            if o.mode == "given":  # every candidate question of the answer was looked at
                rejected["candidates"] += (
                    len(verdict.passed_over) + len(verdict.unchosen) + (verdict.reason is None)
                )
                rejected["candidates_duplicate"] += sum(
                    v.reason == DUPLICATE for v in verdict.passed_over
                )
            copies = [v.question for v in looked_at if v.stage == "duplicate_example"]
            if copies:  # the next prompts no longer show them
                mine.extend(copies)
                prompt, _ = self.prompt_for(slot, asked, withheld=copied + mine)
            if verdict.reason is None:
                return SlotOutcome(
                    slot, verdict.question, verdict.excerpts, attempt, rejected, copied=tuple(mine)
                )
            rejected[verdict.reason] += 1
            if verdict.stage is not None:
                rejected[verdict.stage] += 1
            if verdict.reason == DUPLICATE or llm is not self.llm:
                llm = self.variant(attempt + 1)
            detail = verdict.detail
            tried.append((answer, verdict.detail))
            user = correction_prompt(prompt.user, tried)
        return SlotOutcome(slot, "", (), MAX_ATTEMPTS, rejected, detail, tuple(mine))

    def prompt_for(
        self, slot: Slot, asked: Sequence[str], withheld: Sequence[str] = ()
    ) -> tuple[Prompt, int | None]:
        """The first request of ``slot`` and the evidence length it asks for (None when it
        asks none: no examples' evidence nor ``--evidence``, or a given passage, already the
        length drawn for it). Examples asked of other documents are shown when the examples say
        their documents (:func:`~chunkmark.synth.examples.elsewhere`), and examples that a
        ``withheld`` question repeats are not: a small model that asked an example again asks
        it again while it is in the prompt."""
        o = self.options
        window = f"{slot.doc_id}:{slot.start}"
        evidence = None
        form = None
        if o.mode != "given":
            evidence = steer.target_length(o.example_evidence, o.evidence, o.seed, window)
        else:
            form = steer.target_form(o.examples, o.seed, window)
        prompt = build_prompt(
            self.by_id[slot.doc_id],
            slot,
            mode=o.mode,
            asked=asked,
            examples=[
                e
                for e in steer.shown(
                    steer.elsewhere(o.examples, o.example_docs, slot.doc_id), o.seed, window
                )
                if not any(duplicate_stage(q, (), (e,)) for q in withheld)
            ],
            min_chars=o.min_excerpt_chars,
            evidence_chars=evidence,
            form=form,
            candidates=o.candidates,
        )
        return prompt, evidence

    def variant(self, attempt: int) -> LLM:
        """The client asking a slot's ``attempt``-th answer after a duplicate: the same
        model and cache at :data:`RETRY_TEMPERATURE` with its own seed (the client itself when
        it is not a :class:`~chunkmark.llm.BaseLLM`, whose seed and temperature are known).
        The copy shares the client's counters, limits and cache."""
        if not isinstance(self.llm, BaseLLM):
            return self.llm
        with self._lock:
            found = self._variants.get(attempt)
            if found is None:
                other = copy.copy(self.llm)
                other.seed = self.llm.seed + RETRY_SEED_STEP * attempt
                other.temperature = RETRY_TEMPERATURE
                found = self._variants[attempt] = other
        return found

    def _ask(
        self, llm: LLM, prompt: Prompt, user: str, schema: dict[str, Any] | None
    ) -> str | None:
        """One request to ``llm`` (None for an empty answer), within the budget; stops early
        when the run is stopping."""
        if self.stop_event.is_set():
            raise _Stopping()
        estimate = 0.0
        if self.meter.limit is not None and not is_cached(llm, prompt.system, user, schema):
            price = self.meter.price
            tokens = request_tokens(prompt, user)
            estimate = price.cost(tokens, ANSWER_TOKENS) if price is not None else 0.0
        with self.meter.request(estimate):
            try:
                return llm.complete(
                    prompt.system, user, max_tokens=ANSWER_TOKENS, json_schema=schema
                )
            except EmptyAnswerError:
                return None

    def _normalised_text(self, doc: Document) -> ex.NormalisedText:
        with self._lock:
            found = self._normalised.get(doc.id)
            if found is None:
                found = ex.NormalisedText(doc.text)
                self._normalised[doc.id] = found
        return found

    def finish(self) -> None:
        """Put the questions in plan order (when a stopped run left them otherwise) and write
        the manifest."""
        if self.finished():
            self.output.sort(self.written)
        self.write_manifest()

    def report(self, resumed: int) -> GenerationReport:
        return GenerationReport(
            out=self.out,
            requested=self.options.questions,
            accepted=len(self.written),
            resumed=resumed,
            counts=self.counts(),
            documents=self.document_rows(),
            stopped=self.stopped,
            llm=self.meter.usage(),
            cost_usd=self.meter.spent(),
            document_filter=self.document_filter,
        )


class _Stopping(SynthError):
    """Raised in a worker that finds the run stopping before its request."""

    def __init__(self) -> None:
        super().__init__("The run is stopping.")


def _copied_in(manifest: dict[str, Any]) -> dict[int, tuple[str, ...]]:
    """Per slot, the examples its answers copied, as a manifest's plan records them."""
    plan = manifest.get("plan") or []
    return {int(e["slot"]): tuple(str(q) for q in e["copied"]) for e in plan if e.get("copied")}
