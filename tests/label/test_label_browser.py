"""The labeling page in headless Chromium (Playwright): label, resume, delete, validate; the
token and the folder's bounds hold for requests the page's own script could make."""

from __future__ import annotations

import importlib.util
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import report.test_browser as report_browser
from chunkmark.datasets import find_problems, load_dataset, load_demo
from chunkmark.label.server import create_app
from chunkmark.label.session import open_session

CHROMIUM = report_browser.CHROMIUM
browser = report_browser.browser  # the report's headless Chromium, shared
QUERIES = ["How do I fly Tidewell to the moon?", "How much memory does Tidewell need?"]

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is not installed"
    ),
]


@contextmanager
def serving(folder: Path, queries: Path | None = None) -> Iterator[str]:
    """``chunkmark label``'s app over ``folder`` on a free port of 127.0.0.1; its address."""
    import uvicorn

    session = open_session(
        folder, embedder=None, queries=queries, chunkers=("sentences(n=2)", "recursive(size=128)")
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(session), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The demo's documents as a corpus folder, served by ``chunkmark label``'s app."""
    folder = tmp_path / "corpus"
    (folder / "corpora").mkdir(parents=True)
    for doc in load_demo().documents:
        (folder / "corpora" / f"{doc.id}.md").write_text(doc.text, "utf-8")
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(QUERIES) + "\n", "utf-8")
    with serving(folder, queries) as url:
        yield url, folder


class Opened:
    def __init__(self, browser: Any, url: str) -> None:
        self.page = browser.new_page(viewport={"width": 1500, "height": 950})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = url
        self.load()

    def load(self) -> None:
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready=true]")

    def counts(self) -> str:
        return str(self.page.text_content("#counts"))


def select_with_mouse(page: Any, phrase: str) -> None:
    """Drag the mouse over ``phrase`` in the open document, as a person selects it."""
    box = page.evaluate(
        """(phrase) => {
          const el = document.getElementById('doctext');
          const text = el.textContent;
          const at = text.indexOf(phrase);
          const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
          let node, seen = 0, startNode, startOff, endNode, endOff;
          while ((node = walker.nextNode())) {
            const n = node.data.length;
            if (startNode === undefined && at < seen + n) { startNode = node; startOff = at - seen; }
            if (at + phrase.length - 1 < seen + n) { endNode = node; endOff = at + phrase.length - 1 - seen; break; }
            seen += n;
          }
          const first = document.createRange();
          first.setStart(startNode, startOff); first.setEnd(startNode, startOff + 1);
          const section = el.closest('section');
          const top = first.getBoundingClientRect().top - section.getBoundingClientRect().top;
          section.scrollTop += top - 120;
          const last = document.createRange();
          last.setStart(endNode, endOff); last.setEnd(endNode, endOff + 1);
          const a = first.getClientRects()[0], b = last.getClientRects()[0];
          return {x1: a.left + 1, y1: a.top + a.height / 2, x2: b.right - 1, y2: b.top + b.height / 2};
        }""",
        phrase,
    )
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move((box["x1"] + box["x2"]) / 2, (box["y1"] + box["y2"]) / 2, steps=5)
    page.mouse.move(box["x2"], box["y2"], steps=5)
    page.mouse.up()


def test_label_three_questions_resume_delete_and_validate(
    browser: Any, served: tuple[str, Path], tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    url, folder = served
    demo = {d.id: d.text for d in load_demo().documents}
    opened = Opened(browser, url)
    page = opened.page
    assert page.input_value("#question") == QUERIES[0]  # the first imported query waits
    assert opened.counts() == "0 labeled · 0 not answered"

    # 1. typed, then the first suggestion accepted with the keyboard
    typed = "Which storage targets can Tidewell send snapshots to?"
    page.fill("#question", typed)
    page.press("#question", "Enter")
    page.wait_for_selector("#suggestions li.suggestion")
    suggested = page.text_content("#suggestions li.suggestion .snippet")
    page.keyboard.press("Alt+1")
    page.wait_for_selector("#evidence li")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#counts")).to_have_text(re.compile("^1 labeled"))

    # 2. a span selected with the mouse, its end moved one word later
    page.fill("#question", "How much memory does the chunk index need?")
    page.select_option("#docselect", "tidewell-manual")
    expect(page.locator("#docname")).to_have_text("tidewell-manual")
    phrase = "chunk index"
    select_with_mouse(page, phrase)
    page.click("#addsel")
    page.wait_for_selector("#evidence li")
    page.click("button[aria-label='Excerpt 1: end one word later']")
    page.click("#save")
    expect(page.locator("#counts")).to_have_text(re.compile("^2 labeled"))

    # 3. the next imported query, kept as not answered
    page.click("#next")  # the first query was typed over, not labeled: the next is the second
    assert page.input_value("#question") == QUERIES[1]
    page.click("#unanswered")
    expect(page.locator("#counts")).to_have_text(re.compile("1 not answered$"))

    # reload: everything is there, and the queue resumes at the query not yet labeled
    opened.load()
    assert opened.counts() == "2 labeled · 1 not answered"
    assert page.input_value("#question") == QUERIES[0]
    assert "1 of 2 done" in str(page.text_content("#queue"))
    assert page.locator("#labeled li").count() == 2
    assert page.locator("#unanswered-list li").count() == 1

    # the file on disk: exact offsets and text, checked by the validator
    dataset = load_dataset(folder)
    assert find_problems(folder) == []
    by_text = {q.text: q for q in dataset.questions}
    first = by_text[typed]
    (span,) = first.excerpts
    assert demo[first.doc_id][span.start : span.end] == suggested
    second = by_text["How much memory does the chunk index need?"]
    (span,) = second.excerpts
    text = demo["tidewell-manual"]
    at = text.index(phrase)
    rest = text[at + len(phrase) :]
    next_word = rest[: len(rest) - len(rest.lstrip())] + rest.lstrip().split()[0]
    assert (span.start, text[span.start : span.end]) == (at, phrase + next_word)

    # delete one: the file loses it, the validator still passes
    page.click(f"button[aria-label='Delete question {first.id}']")
    expect(page.locator("#counts")).to_have_text(re.compile("^1 labeled"))
    assert [q.text for q in load_dataset(folder).questions] == [second.text]
    assert find_problems(folder) == []
    page.screenshot(path=str(tmp_path / "label.png"), full_page=True)
    assert opened.errors == []
    assert all(u.startswith(url) for u in opened.requests), opened.requests


def test_a_post_without_the_token_and_a_path_outside_are_refused(
    browser: Any, served: tuple[str, Path], tmp_path: Path
) -> None:
    url, folder = served
    page = Opened(browser, url).page
    statuses = page.evaluate(
        """async () => {
          const token = document.querySelector('meta[name="chunkmark-token"]').content;
          const post = (path, body, headers) => fetch(path, {method: 'POST', headers,
            body: JSON.stringify(body)}).then((r) => r.status);
          const q = {question: 'q?', doc_id: 'tidewell-manual', excerpts: [[0, 8]]};
          return {
            without: await post('/api/questions', q, {}),
            wrong: await post('/api/questions', q, {'X-Chunkmark-Token': token + 'x'}),
            outside: await post('/api/export', {path: '../outside.json'}, {'X-Chunkmark-Token': token}),
            file: await fetch('/%2e%2e/%2e%2e/etc/passwd').then((r) => r.status),
            doc: await fetch('/api/document?id=../../etc/passwd', {headers: {'X-Chunkmark-Token': token}}).then((r) => r.status),
          };
        }"""
    )
    assert statuses == {"without": 403, "wrong": 403, "outside": 400, "file": 404, "doc": 404}
    assert not (folder / "questions.jsonl").exists()
    assert not (folder.parent / "outside.json").exists()


def test_two_tabs_on_one_folder_lose_nothing_and_undo_restores(
    browser: Any, served: tuple[str, Path]
) -> None:
    from playwright.sync_api import expect

    url, folder = served
    one, two = Opened(browser, url).page, Opened(browser, url).page
    for page, question in ((one, "Which storage targets exist?"), (two, "Where is the index?")):
        page.fill("#question", question)
        page.press("#question", "Enter")
        page.wait_for_selector("#suggestions li.suggestion")
        page.click("button[aria-label='Accept suggestion 2 as evidence']")
        page.wait_for_selector("#evidence li")
        page.click("#save")
    expect(two.locator("#counts")).to_have_text(re.compile("^2 labeled"))
    assert {q.text for q in load_dataset(folder).questions} == {
        "Which storage targets exist?",
        "Where is the index?",
    }
    saved = (folder / "questions.jsonl").read_bytes()
    one.click("button[aria-label='Delete question q1']")
    expect(one.locator("#counts")).to_have_text(re.compile("^1 labeled"))
    one.keyboard.press("Alt+z")
    expect(one.locator("#counts")).to_have_text(re.compile("^2 labeled"))
    assert (folder / "questions.jsonl").read_bytes() == saved


def test_offsets_stay_exact_after_characters_outside_the_basic_plane(
    browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    folder = tmp_path / "emoji"
    folder.mkdir()
    text = "Party 🎉🎉 notes.\n\nThe cake 🍰 arrives at noon on Friday. Bring 𝒳 plates."
    (folder / "party.md").write_text(text, "utf-8")
    with serving(folder) as url:
        page = Opened(browser, url).page
        page.fill("#question", "When does the cake arrive?")
        select_with_mouse(page, "arrives at noon")
        page.click("#addsel")
        page.wait_for_selector("#evidence li")
        page.click("button[aria-label='Excerpt 1: start one word earlier']")
        page.click("#save")
        expect(page.locator("#counts")).to_have_text(re.compile("^1 labeled"))
    ((span,),) = [q.excerpts for q in load_dataset(folder).questions]
    assert text[span.start : span.end] == "🍰 arrives at noon"
    assert find_problems(folder) == []


def test_a_search_hit_becomes_evidence_widened_to_its_sentence(
    browser: Any, served: tuple[str, Path]
) -> None:
    from playwright.sync_api import expect

    url, folder = served
    page = Opened(browser, url).page
    page.fill("#question", "Where do snapshots go?")
    page.fill("#search", "SFTP server")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("#hits li")
    page.locator("#hits li").first.get_by_role("button", name=re.compile("^Add hit")).click()
    page.wait_for_selector("#evidence li")
    page.click("button[aria-label='Excerpt 1: end one sentence later']")
    page.click("#save")
    expect(page.locator("#counts")).to_have_text(re.compile("^1 labeled"))
    ((span,),) = [q.excerpts for q in load_dataset(folder).questions]
    text = load_dataset(folder).by_id["tidewell-manual"].text
    found = re.search(r"SFTP\s+server", text)  # a line break in the document: search spans it
    assert found is not None and "\n" in found.group()
    at = found.start()
    end = text.index(".", at) + 1  # the end of that sentence
    assert (span.start, span.end) == (at, end)
