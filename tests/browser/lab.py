"""Real JupyterLab in real headless Chromium, for the browser tests and benchmarks.

JupyterLab is started on 127.0.0.1 with a fresh root directory and killed by
PID; Chromium is Debian's, driven by Playwright with ``executable_path`` so
nothing is ever downloaded.  Every wait has a hard timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = os.environ.get("JUPYTER_REFS_CHROMIUM", "/usr/bin/chromium")
#: This checkout, and the extension its labextension/ builds (``jlpm build`` there).
CHECKOUT = Path(__file__).resolve().parents[2]
BUILT = CHECKOUT / "jupyter_refs" / "labextension"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def have_browser() -> bool:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyter_lab(root: Path, timeout: float = 60, env: dict[str, str] | None = None):
    """A JupyterLab server on 127.0.0.1 serving ``root`` (its kernels with ``env`` added);
    yields its base URL."""
    port = free_port()
    # No "get notified about Jupyter news?" toast over the screenshots.
    settings = root / ".jupyter-config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log = open(root / "jupyter.log", "w")
    args, checkout_env = _this_checkout(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip", "127.0.0.1",
         "--port", str(port), "--ServerApp.token=", "--ServerApp.password=",
         "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}",
         "--ServerApp.disable_check_xsrf=True", *args],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, **(env or {}), "JUPYTER_CONFIG_DIR": str(root / ".jupyter-config"),
             **checkout_env},
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(url + "api/status", timeout=2) as r:
                    json.load(r)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log_text = (root / "jupyter.log").read_text()
                    raise RuntimeError("JupyterLab did not start:\n" + log_text) from None
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def _this_checkout(root: Path) -> tuple[list[str], dict[str, str]]:
    """JupyterLab arguments and environment that run this checkout: its built extension
    ahead of the installed one (the same files when the editable install is this checkout;
    a git worktree's own build otherwise), and its package in the kernels.  Nothing when the
    checkout has no build: then the installed extension is what runs."""
    if not (BUILT / "package.json").exists():
        return [], {}
    from jupyter_core.paths import jupyter_path

    own = root / ".labextensions"
    own.mkdir(exist_ok=True)
    link = own / "jupyter-refs"
    if not link.exists():
        link.symlink_to(BUILT, target_is_directory=True)
    paths = [str(own), *jupyter_path("labextensions")]
    python_path = os.pathsep.join(p for p in (str(CHECKOUT), os.environ.get("PYTHONPATH")) if p)
    # One argument per path: `jupyter lab` hands an extension app a list given at once as one string.
    return [f"--LabApp.labextensions_path={p}" for p in paths], {"PYTHONPATH": python_path}


@contextmanager
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@contextmanager
def new_page(b, width: int = 1400, height: int = 900):
    """A page of browser ``b``, closed however the test ends."""
    page = b.new_page(viewport={"width": width, "height": height})
    try:
        yield page
    finally:
        page.close()


def write_notebook(path: Path, cells: list[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def run_notebook_in_lab(page, base_url: str, name: str, timeout_ms: int = 90_000) -> None:
    """Open ``name`` in JupyterLab, wait for its kernel, run all cells."""
    page.set_default_timeout(timeout_ms)
    page.goto(f"{base_url}lab/tree/{name}?reset")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext.session "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                           ".connectionStatus === 'connected'")
    # Start the run; do not await it (the command's promise settles when every cell is done).
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
