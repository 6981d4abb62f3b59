"""Regenerate the README's screenshots in docs/ — on purpose, never as a side effect of the tests.

    python docs/screenshots.py

Runs the browser tests that draw them (real JupyterLab in headless Chromium,
see tests/browser/) with ``JUPYTER_REFS_SCREENSHOTS`` pointing at this folder;
under a plain ``pytest`` run the same tests write their screenshots to
temporary folders.  Review the new PNGs with ``git diff --stat docs/`` and
commit them if they are better.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
#: The tests that draw each screenshot.
LAB, EXT = "tests/browser/test_lab.py::", "tests/browser/test_extension.py::"
SHOTS = {
    "timeline-legacy.png": LAB + "test_timeline_renders_with_labelled_lanes[legacy]",
    "timeline-fixed.png": LAB + "test_timeline_renders_with_labelled_lanes[fixed]",
    "sidebar.png": EXT + "test_sidebar_follows_the_cluster_and_filters_the_timeline",
    "saved-trace.png": EXT + "test_saved_notebook_shows_static_timeline_without_kernel",
}


def main() -> int:
    env = {**os.environ, "JUPYTER_REFS_SCREENSHOTS": str(DOCS)}
    print(f"writing {', '.join(SHOTS)} into {DOCS}", flush=True)
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *SHOTS.values()], cwd=ROOT, env=env)
    if rc == 0:
        print("done: review with `git diff --stat docs/`")
    return rc


if __name__ == "__main__":
    sys.exit(main())
