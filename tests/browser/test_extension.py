"""The JupyterLab extension in real JupyterLab, in real headless Chromium.

* it activates, and its sidebar says plainly when there is nothing to show;
* the sidebar follows the notebook's kernel-side cluster: its keys appear, a cell
  that drops a future makes its key go, a click on a key filters the live timeline;
* "trace only this key" on a key's card narrows the running trace to it, "trace all
  keys" undoes it;
* a worker the dask scheduler removed is named, with why, under the cluster's line;
* the saved copy of a live timeline's trace is kept current in the notebook file;
* a saved notebook opened with its kernel shut down shows the static timeline.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import nbformat
import pytest
from lab import browser, jupyter_lab, new_page, write_notebook

from jupyter_refs.views.saved import MIME

APP = "window.jupyterapp"
NB = f"{APP}.shell.currentWidget"
ROWS = "#jupyter-refs-sidebar .jp-RefsSidebar-row[data-key]"

SIDEBAR_CELLS = [
    "%load_ext jupyter_refs",
    "%cluster --protocol legacy",
    "%timeline",
    "%scatter x = 123\n%scatter y = 7",
    "del x",
]

FOCUS_CELLS = [
    "%load_ext jupyter_refs",
    "%cluster --protocol legacy --network immediate",
    "%scatter x = 123\n%scatter y = 7",
    "%scatter z = 9",
    "%scatter w = 11",
]

GONE_CELLS = [
    "%load_ext jupyter_refs",
    "from distributed import Client, LocalCluster\n"
    "dask_cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,\n"
    "                            dashboard_address=':0')\n"
    "dc = Client(dask_cluster)",
    "%cluster --attach dc",
    "x = dc.scatter(1, broadcast=True)",
    "dc.retire_workers([sorted(dc.scheduler_info()['workers'])[0]])",
]

RACE_CELLS = [
    "%load_ext jupyter_refs",
    "from jupyter_refs.demo import scatter_race\n"
    "cluster = scatter_race('legacy', seed=3, iterations=40).cluster",
    "from jupyter_refs.views.timeline import Timeline\nTimeline(cluster, live=False)",
]


LONG_CELLS = [
    "%load_ext jupyter_refs",
    "%cluster --protocol dask --network live\n%scatter x = 123\n%hold client:1->scheduler\n"
    "%scatter x = 123\n%step --all\n%hold --off",
    "long = client.submit(sum, [1, 2], key='a-rather-long-key-name-' + 'abcdef0123456789' * 3)\n"
    "long.result()",
]


@pytest.fixture
def shots(tmp_path) -> Path:
    """Where screenshots go: a temporary folder; ``docs/screenshots.py`` points it at docs/."""
    return Path(os.environ.get("JUPYTER_REFS_SCREENSHOTS") or tmp_path)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("labext")
    write_notebook(root / "sidebar.ipynb", SIDEBAR_CELLS)
    write_notebook(root / "race.ipynb", RACE_CELLS)
    write_notebook(root / "plain.ipynb", ["1 + 1"])
    write_notebook(root / "focus.ipynb", FOCUS_CELLS)
    write_notebook(root / "gone.ipynb", GONE_CELLS)
    write_notebook(root / "long.ipynb", LONG_CELLS)
    with browser() as b, jupyter_lab(root) as url:
        yield url, b, root


def open_notebook(page, url: str, name: str) -> None:
    page.set_default_timeout(90_000)
    page.goto(f"{url}lab/tree/{name}?reset")
    page.wait_for_function(f"{APP} && {NB} && {NB}.sessionContext && {NB}.sessionContext.session "
                           f"&& {NB}.sessionContext.session.kernel "
                           f"&& {NB}.sessionContext.session.kernel.connectionStatus === 'connected'")


def run_cells(page, start: int, stop: int) -> None:
    """Run cells ``start..stop-1`` one by one, waiting for each to finish."""
    page.evaluate(f"""async () => {{
        const nb = {NB};
        for (let i = {start}; i < {stop}; i++) {{
            nb.content.activeCellIndex = i;
            await {APP}.commands.execute('notebook:run-cell');
        }}
    }}""")


def show_sidebar(page) -> None:
    page.evaluate(f"() => {APP}.shell.activateById('jupyter-refs-sidebar')")
    page.wait_for_selector("#jupyter-refs-sidebar", state="visible")


def sidebar_keys(page) -> list[str]:
    return page.evaluate(f"() => [...document.querySelectorAll({ROWS!r})].map(r => r.dataset.key)")


def test_extension_activates_and_says_when_it_is_not_loaded(lab):
    url, b, _ = lab
    with new_page(b) as page:
        open_notebook(page, url, "plain.ipynb")
        assert page.evaluate(f"() => {APP}.isPluginActivated('jupyter-refs:plugin')")
        show_sidebar(page)
        page.wait_for_function("document.querySelector('#jupyter-refs-sidebar').dataset.status "
                               "=== 'not-loaded'", timeout=30_000)
        text = page.inner_text("#jupyter-refs-sidebar")
        assert "jupyter_refs is not loaded in this kernel" in text and "%load_ext jupyter_refs" in text


def test_sidebar_follows_the_cluster_and_filters_the_timeline(lab, shots):
    url, b, root = lab
    with new_page(b, 1500, 950) as page:
        open_notebook(page, url, "sidebar.ipynb")
        show_sidebar(page)
        run_cells(page, 0, 2)  # %load_ext, %cluster
        page.wait_for_function("document.querySelector('#jupyter-refs-sidebar').dataset.status "
                               "=== 'loaded'", timeout=30_000)
        assert "No keys yet" in page.inner_text("#jupyter-refs-sidebar")
        run_cells(page, 2, 4)  # the live timeline, then two scatters
        page.wait_for_function(f"document.querySelectorAll({ROWS!r}).length === 2", timeout=30_000)
        keys = sidebar_keys(page)
        x_key = page.evaluate(f"""async () => {{
            const k = {NB}.sessionContext.session.kernel;
            const f = k.requestExecute({{code: 'print(x.key, y.key)'}});
            let out = '';
            f.onIOPub = m => {{ if (m.header.msg_type === 'stream') out += m.content.text; }};
            await f.done;
            return out.trim();
        }}""").split()
        assert sorted(keys) == sorted(x_key)
        row = page.inner_text(f"#jupyter-refs-sidebar .jp-RefsSidebar-row[data-key='{x_key[0]}']")
        assert "client:1 refcount 1" in row and "finished" in row and "memory" in row
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "sidebar.png"))

        # A click on y's key: the live timeline's key box takes it.
        page.click(f"#jupyter-refs-sidebar .jp-RefsSidebar-row[data-key='{x_key[1]}']")
        page.wait_for_function(f"""() => [...document.querySelectorAll('.jp-OutputArea input')]
            .some(i => i.value === {json.dumps(x_key[1])})""", timeout=20_000)
        assert "timelines show only" in page.inner_text("#jupyter-refs-sidebar")

        # The cell that drops x: its key goes from the sidebar, y's stays.
        run_cells(page, 4, 5)
        page.wait_for_function(f"""() => {{
            const keys = [...document.querySelectorAll({ROWS!r})].map(r => r.dataset.key);
            return keys.length === 1 && keys[0] === {json.dumps(x_key[1])};
        }}""", timeout=30_000)

        # The live timeline's saved trace is refreshed in the document, then saved.
        time.sleep(3)  # the kernel sends saved traces every 2 s; this waits for one, not for a race
        page.evaluate(f"async () => {{ await {APP}.commands.execute('docmanager:save'); }}")
        nb = nbformat.read(str(root / "sidebar.ipynb"), as_version=4)
        saved = [o["data"][MIME] for o in nb.cells[2].outputs if MIME in o.get("data", {})]
        assert len(saved) == 1
        assert set(x_key) <= set(saved[0]["seen_keys"])  # scattered after the timeline was shown
        assert saved[0]["keys"] == [x_key[1]]  # saved as shown: filtered to y by the click
        assert "refcount.inc" in saved[0]["events"]["kind"]

        # A kernel restart: the sidebar notices the extension is gone, then that it is back.
        page.evaluate(f"async () => {{ await {NB}.sessionContext.restartKernel(); }}")
        page.wait_for_function("document.querySelector('#jupyter-refs-sidebar').dataset.status "
                               "=== 'not-loaded'", timeout=60_000)
        page.evaluate(f"""async () => {{
            await {NB}.sessionContext.session.kernel.requestExecute({{code: '%load_ext jupyter_refs'}}).done;
        }}""")
        page.wait_for_function("document.querySelector('#jupyter-refs-sidebar').dataset.status "
                               "=== 'loaded'", timeout=30_000)
        assert "no cluster yet" in page.inner_text("#jupyter-refs-sidebar")


def kernel_says(page, code: str) -> str:
    """What ``code`` prints in the notebook's kernel."""
    return page.evaluate(f"""async () => {{
        const f = {NB}.sessionContext.session.kernel.requestExecute({{code: {json.dumps(code)}}});
        let out = '';
        f.onIOPub = m => {{ if (m.header.msg_type === 'stream') out += m.content.text; }};
        await f.done;
        return out.trim();
    }}""")


def test_trace_only_this_key_narrows_the_running_trace(lab, shots):
    url, b, _ = lab
    with new_page(b, 1500, 950) as page:
        open_notebook(page, url, "focus.ipynb")
        show_sidebar(page)
        run_cells(page, 0, 3)  # %load_ext, %cluster, two scatters
        page.wait_for_function(f"document.querySelectorAll({ROWS!r}).length === 2", timeout=30_000)
        x, y = kernel_says(page, "print(x.key, y.key)").split()
        page.click(f"#jupyter-refs-sidebar .jp-RefsSidebar-row[data-key='{x}'] .jp-RefsSidebar-focus")
        # The kernel's trace follows x only: y's card goes, the sidebar says what is traced.
        page.wait_for_function(f"""() => {{
            const keys = [...document.querySelectorAll({ROWS!r})].map(r => r.dataset.key);
            return keys.length === 1 && keys[0] === {json.dumps(x)};
        }}""", timeout=30_000)
        assert f"tracing only keys {x}" in page.inner_text("#jupyter-refs-sidebar .jp-RefsSidebar-focused")
        assert kernel_says(page, "print(cluster.focused)") == f"keys {x}"
        # Not a click on the card: the timelines were not filtered.
        assert "timelines show only" not in page.inner_text("#jupyter-refs-sidebar")
        page.wait_for_timeout(300)
        page.screenshot(path=str(shots / "sidebar-focus.png"))
        run_cells(page, 3, 4)  # z, scattered while only x is traced: never recorded
        assert kernel_says(page, "print(len(cluster.trace.events(key=z.key)))") == "0"
        page.click("#jupyter-refs-sidebar .jp-RefsSidebar-unfocus")
        page.wait_for_function("!document.querySelector('#jupyter-refs-sidebar .jp-RefsSidebar-focused')",
                               timeout=30_000)
        assert kernel_says(page, "print(cluster.focused)") == "None"
        run_cells(page, 4, 5)  # w, scattered with every key traced again
        w = kernel_says(page, "print(w.key)")
        page.wait_for_function(f"""() => [...document.querySelectorAll({ROWS!r})]
            .some(r => r.dataset.key === {json.dumps(w)})""", timeout=30_000)
        assert kernel_says(page, "print(cluster.violations)") == "[]"


def test_sidebar_marks_a_worker_the_dask_scheduler_removed(lab, shots):
    pytest.importorskip("distributed")
    url, b, _ = lab
    with new_page(b, 1500, 950) as page:
        open_notebook(page, url, "gone.ipynb")
        show_sidebar(page)
        run_cells(page, 0, 4)  # %load_ext, a dask cluster, %cluster --attach, a scatter
        page.wait_for_function(f"document.querySelectorAll({ROWS!r}).length === 1", timeout=60_000)
        assert not page.query_selector("#jupyter-refs-sidebar .jp-RefsSidebar-gone")
        run_cells(page, 4, 5)  # retire one of its two workers
        page.wait_for_selector("#jupyter-refs-sidebar .jp-RefsSidebar-gone", timeout=60_000)
        [line] = page.evaluate("() => [...document.querySelectorAll("
                               "'#jupyter-refs-sidebar .jp-RefsSidebar-gone')].map(e => e.textContent)")
        assert line.startswith("gone: worker:") and line.endswith(" (retired)")
        page.screenshot(path=str(shots / "sidebar-gone.png"))


def test_saved_notebook_shows_static_timeline_without_kernel(lab, shots):
    url, b, root = lab
    with new_page(b) as page:
        open_notebook(page, url, "race.ipynb")
        run_cells(page, 0, 3)
        # Live first: the widget renders (bokeh canvas) and the fallback stays out of the way.
        page.wait_for_selector(".jp-OutputArea canvas", timeout=60_000)
        assert page.locator(".jp-RefsFallback").count() == 0
        page.evaluate(f"async () => {{ await {APP}.commands.execute('docmanager:save'); }}")
        page.evaluate(f"async () => {{ await {NB}.sessionContext.shutdown(); }}")
    # The saved file opened with no kernel at all: told no kernel or language, JupyterLab
    # asks which kernel to start, the reader answers "No Kernel", no widget model
    # exists, and the output still shows the race.
    nb = nbformat.read(str(root / "race.ipynb"), as_version=4)
    nb.metadata.pop("kernelspec", None)
    nb.metadata.pop("language_info", None)
    nbformat.write(nb, str(root / "handout.ipynb"))
    with new_page(b) as page:
        page.set_default_timeout(60_000)
        page.goto(f"{url}lab/tree/handout.ipynb?reset")
        page.wait_for_function(f"{APP} && {NB} && {NB}.context && {NB}.context.isReady")
        page.click(".jp-Dialog button:has-text('No Kernel')")
        static = page.locator(".jp-RefsFallback .jp-RefsTimeline")
        static.wait_for(state="visible", timeout=30_000)
        drawn = json.loads(static.get_attribute("data-drawn"))
        saved = next(o["data"][MIME] for o in nb.cells[2].outputs if MIME in o.get("data", {}))
        assert drawn["violations"] == len(saved["violations"]["x"]) >= 1
        assert drawn["messages"] == len(saved["messages"]["x0"]) > 50
        assert page.evaluate(f"() => !({NB}.sessionContext.session && {NB}.sessionContext.session.kernel)")
        assert page.locator(".jp-OutputArea canvas").count() == 0  # no live widget without a kernel
        assert "saved trace (no kernel needed)" in static.inner_text()
        # The sidebar says the notebook has no kernel.
        show_sidebar(page)
        page.wait_for_function("document.querySelector('#jupyter-refs-sidebar').dataset.status "
                               "=== 'no-kernel'", timeout=30_000)
        page.wait_for_timeout(300)
        page.locator(".jp-Cell-outputArea").last.screenshot(path=str(shots / "saved-trace.png"))
        assert (shots / "saved-trace.png").stat().st_size > 10_000


def test_long_keys_wrap_inside_the_sidebar(lab):
    """Issue 46.9: a key is one long word (int-<32 hex>, a user's own name); in a violation, the
    filter line or a card it must wrap, not run past the sidebar's right edge."""
    url, b, _ = lab
    with new_page(b) as page:
        open_notebook(page, url, "long.ipynb")
        show_sidebar(page)
        run_cells(page, 0, 3)
        page.wait_for_function(f"document.querySelectorAll({ROWS!r}).length >= 2 && document"
                               ".querySelector('#jupyter-refs-sidebar .jp-RefsSidebar-violations')",
                               timeout=30_000)
        page.click(f"{ROWS}[data-key^='a-rather-long-key-name-']")  # the filter line names it too
        page.wait_for_selector("#jupyter-refs-sidebar .jp-RefsSidebar-filter")
        width = page.evaluate("""() => {
            const side = document.querySelector('#jupyter-refs-sidebar');
            return {scroll: side.scrollWidth, client: side.clientWidth};
        }""")
        assert width["scroll"] <= width["client"], width
