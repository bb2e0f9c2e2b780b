"""The page's server: the session token on every API call, nothing outside the folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from chunkmark.datasets import find_problems, load_dataset
from chunkmark.label.server import TOKEN_HEADER, create_app
from chunkmark.label.session import open_session

TEXT = "The pump runs at night. Its filter is changed every month.\n\nThe tank holds 300 litres."


@pytest.fixture
def served(tmp_path: Path) -> tuple[TestClient, str, Path]:
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "pump.txt").write_text(TEXT, "utf-8")
    (folder / "other.md").write_text("Nothing about machines here, only poems. " * 5, "utf-8")
    session = open_session(folder, embedder=None, chunkers=("sentences(n=1)",))
    return TestClient(create_app(session)), session.token, folder


POSTS = [
    "/api/suggest",
    "/api/search",
    "/api/questions",
    "/api/unanswered",
    "/api/delete",
    "/api/undo",
    "/api/export",
]


def test_every_api_call_needs_the_session_token(served: tuple[TestClient, str, Path]) -> None:
    client, token, folder = served
    for path in POSTS:
        for headers in ({}, {TOKEN_HEADER: "not-the-token"}):
            response = client.post(
                path,
                json={
                    "question": "x",
                    "doc_id": "pump",
                    "excerpts": [[0, 8]],
                    "id": "q1",
                    "path": "e.json",
                    "text": "pump",
                },
                headers=headers,
            )
            assert response.status_code == 403, path
    for path in ("/api/state", "/api/document?id=pump"):
        assert client.get(path).status_code == 403
    assert not (folder / "questions.jsonl").exists()
    assert not (folder / "e.json").exists()
    page = client.get("/")
    assert page.status_code == 200 and token in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]


def test_another_host_name_is_refused(served: tuple[TestClient, str, Path]) -> None:
    client, token, _ = served
    response = client.get("/api/state", headers={TOKEN_HEADER: token, "Host": "evil.example"})
    assert response.status_code == 400


def test_no_path_outside_the_folder_is_served_or_written(
    served: tuple[TestClient, str, Path], tmp_path: Path
) -> None:
    client, token, folder = served
    h = {TOKEN_HEADER: token}
    for path in ("/../../etc/passwd", "/pump.txt", "/api/../pump.txt", "/%2e%2e/%2e%2e/etc/passwd"):
        assert client.get(path, headers=h).status_code == 404, path
    assert client.get("/api/document?id=../../../etc/passwd", headers=h).status_code == 404
    assert (
        client.post(
            "/api/questions",
            headers=h,
            json={"question": "q?", "doc_id": "pump", "excerpts": [[0, 8]]},
        ).status_code
        == 200
    )
    for outside in ("../stolen.json", str(tmp_path / "abs.json"), "/etc/x.json", "", "."):
        response = client.post("/api/export", headers=h, json={"path": outside})
        assert response.status_code == 400, outside
        assert "outside the dataset folder" in response.json()["error"]
    assert not (tmp_path / "stolen.json").exists() and not (tmp_path / "abs.json").exists()
    (tmp_path / "elsewhere").mkdir()
    (folder / "link").symlink_to(tmp_path / "elsewhere")
    assert client.post("/api/export", headers=h, json={"path": "link/x.json"}).status_code == 400
    assert not (tmp_path / "elsewhere" / "x.json").exists()
    done = client.post("/api/export", headers=h, json={"path": "exports/ls.json"})
    assert done.status_code == 200 and (folder / "exports" / "ls.json").is_file()


def test_labeling_through_the_api_writes_a_valid_set(served: tuple[TestClient, str, Path]) -> None:
    client, token, folder = served
    h = {TOKEN_HEADER: token}
    found = client.post(
        "/api/suggest", headers=h, json={"question": "How often is the filter changed?"}
    )
    first = found.json()["passages"][0]
    assert first["doc_id"] == "pump" and "filter is changed" in first["text"]
    assert first["text"] == TEXT[first["start"] : first["end"]]
    hits = client.post(
        "/api/search", headers=h, json={"text": "300 LITRES", "doc_id": "pump"}
    ).json()["hits"]
    assert [(x["match"], x["start"]) for x in hits] == [("300 litres", TEXT.index("300 litres"))]
    saved = client.post(
        "/api/questions",
        headers=h,
        json={
            "question": "How often is the filter changed?",
            "doc_id": "pump",
            "excerpts": [[first["start"], first["end"]]],
        },
    ).json()
    assert saved["counts"] == {"answered": 1, "unanswered": 0}
    bad = client.post(
        "/api/questions",
        headers=h,
        json={"question": "q", "doc_id": "pump", "excerpts": [[5, 9999]]},
    )
    assert bad.status_code == 400 and "fall outside the document" in bad.json()["error"]
    malformed = client.post(
        "/api/questions", headers=h, json={"question": "q", "doc_id": "pump", "excerpts": "0-8"}
    )
    assert malformed.status_code == 400
    un = client.post("/api/unanswered", headers=h, json={"question": "Who built it?"}).json()
    assert un["counts"] == {"answered": 1, "unanswered": 1}
    assert find_problems(folder) == []
    (q,) = load_dataset(folder).questions
    assert (q.excerpts[0].start, q.excerpts[0].end) == (first["start"], first["end"])
    lines = (folder / "unanswered.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(x)["question"] for x in lines] == ["Who built it?"]
