"""dask's ``performance_report``, as dask users write one: under the switch the block's page is
written as dask's is — dask's template, title and tabs, the summary's facts (the tasks that
ran in the block, the time per action, the workers and threads, the calling code) — and what
the model does not measure says so in its tab.  The page goes to a temporary directory."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr

pytest.importorskip("distributed")
pytest.importorskip("bokeh")

REPORT = (
    "import os, re, tempfile\n"
    "from dask.distributed import performance_report\n"
    "import dask.array as da\n"
    "path = os.path.join(tempfile.mkdtemp(), 'report.html')\n"
    "def double(x):\n    return 2 * x\n"
    "with performance_report(filename=path):\n"
    "    total = client.submit(sum, client.map(double, range(4))).result()\n"
    "with open(path) as f:\n    page = f.read()\n"
    "titles = re.findall(r'\"title\":\"([^\"]+)\"', page)\n"
    "fact = lambda name: re.search(name + r': ([^&]*?) &lt;', page).group(1)\n"
    "out = (total, '<title>Dask Performance Report</title>' in page, titles,\n"
    "       fact('number of tasks'), 'compute time' in page, fact('Workers'), fact('Threads'),\n"
    "       'client.map(double, range(4))' in page)\n"
)


@pytest.mark.dask
def test_a_performance_report_is_written_as_dasks():
    real, model = on_dask_and_model(REPORT)
    assert model == real
    assert "'Summary', 'Task Stream'" in model  # the tabs were found: the page was read


def test_what_the_model_does_not_measure_says_so_in_its_tab(tmp_path):
    path = tmp_path / "report.html"
    with jr.model():
        from dask.distributed import Client, performance_report

        with Client(n_workers=1, threads_per_worker=1, processes=False) as c:
            with performance_report(filename=str(path)):
                c.submit(sum, [1, 2]).result()
    page = path.read_text()
    assert "Not modelled: the bandwidth between workers" in page
    assert "number of tasks: 1 " in page


def test_an_asynchronous_report_says_it_is_not_modelled():
    import asyncio

    async def report() -> None:
        from dask.distributed import performance_report

        async with performance_report():
            pass

    with jr.model(), pytest.raises(jr.NotModelledError, match="async with"):
        asyncio.run(report())
