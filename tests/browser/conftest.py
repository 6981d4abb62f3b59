"""Browser tests need Debian's chromium and the playwright package.

Locally they are skipped when either is missing; under CI (``CI`` set) a
missing browser is a failure, so a green run always means they ran.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from lab import have_browser  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if have_browser():
        return
    if os.environ.get("CI"):
        raise pytest.UsageError("CI is set but chromium/playwright are missing: .ci/run installs them")
    skip = pytest.mark.skip(reason="needs /usr/bin/chromium and the playwright package")
    for item in items:
        if "browser" in str(item.fspath):
            item.add_marker(skip)
