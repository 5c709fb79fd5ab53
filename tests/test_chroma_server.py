"""The same index code against a real `chroma run` server through HttpClient."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from chatbot.index import SegmentIndex, make_client
from corpus.segmenter import segment_documents
from tests.conftest import FakeEmbedder, unit
from tests.ports import free_port
from tests.test_index import DOCS

pytestmark = pytest.mark.integration


@pytest.fixture
def chroma_server(tmp_path):
    exe = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(exe).exists():
        pytest.skip("chroma CLI not installed")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            make_client(tmp_path, url).heartbeat()
            break
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("chroma server did not start within 60 s")
            time.sleep(0.5)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_http_client_ingests_incrementally_and_ranks_exactly(chroma_server, tmp_path):
    embedder = FakeEmbedder()
    index = SegmentIndex(make_client(tmp_path, chroma_server), "served", embedder)

    first = index.sync(segment_documents(DOCS))
    again = SegmentIndex(make_client(tmp_path, chroma_server), "served", embedder).sync(segment_documents(DOCS[:3]))
    results = index.search_vectors(np.vstack([unit(0.8, 0, 0.6)]), 3)

    assert (first.embedded, first.deleted) == (4, 0)
    assert (again.embedded, again.deleted, again.unchanged) == (0, 1, 3)
    assert [h.segment.doc_id for h in results[0]] == ["b", "a", "c"]
    assert results[0][0].segment.source_url == "https://example.org/b"
