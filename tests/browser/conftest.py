"""Fixtures shared by the browser tests: one headless Debian Chromium per test module."""

from __future__ import annotations

import pytest

from tests.browser.support import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api as playwright_api

    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
