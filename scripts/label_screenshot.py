"""The screenshot of docs/label.md: ``chunkmark label`` on the demo's documents in headless
Chromium, one question typed, its suggestions shown, the first accepted.

    PYTHONPATH=src .venv/bin/python scripts/label_screenshot.py [--out docs/label.png]
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
from pathlib import Path

import uvicorn
from playwright.sync_api import sync_playwright

from chunkmark.datasets import load_demo
from chunkmark.label.server import create_app
from chunkmark.label.session import build_embedder, open_session

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/label.png"))
    parser.add_argument("--embedder", default="auto")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "demo-corpus"
        (folder / "corpora").mkdir(parents=True)
        for doc in load_demo().documents:
            (folder / "corpora" / f"{doc.id}.md").write_text(doc.text, "utf-8")
        queries = Path(tmp) / "queries.txt"
        queries.write_text("How often should I turn the compost pile?\n", "utf-8")
        session = open_session(folder, embedder=build_embedder(args.embedder), queries=queries)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(create_app(session), log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            thread.join(0.05)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 900})
            page.goto(f"http://127.0.0.1:{sock.getsockname()[1]}/")
            page.wait_for_selector("body[data-ready=true]")
            page.press("#question", "Enter")
            page.wait_for_selector("#suggestions li.suggestion")
            page.keyboard.press("Alt+1")
            page.wait_for_selector("#evidence li")
            page.screenshot(path=str(args.out))
            browser.close()
        server.should_exit = True
        thread.join(10)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
