"""Views: timeline build time, first render in Chromium, live update rate and its cost.

    python benchmarks/bench_views.py [--events 100000] [--seconds 3] [--no-browser]

1. Build: a ``Timeline`` (model, bokeh figure, widget state) for a trace of
   about ``--events`` events from a ``map`` on the kernel-side cluster; median of 3.
2. First render: that timeline exported as standalone HTML, opened in Debian's
   headless Chromium with the network off; time until BokehJS reports the
   document idle; median of 3.
3. Live: in a real IPython kernel (jupyter_client), a loop scatters and drops
   on the live network for ``--seconds``, alternately without and with a live
   timeline displayed; the figures are the loop's iterations per second and the
   timeline patches per second that reached iopub (medians of 3 each).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jupyter_refs import Cluster
from jupyter_refs.views.export import export
from jupyter_refs.views.timeline import Timeline

TESTS = Path(__file__).resolve().parents[1] / "tests"


def trace_of(n_events: int) -> Cluster:
    cluster = Cluster(network="immediate", workers=2, trace_capacity=2 * n_events)
    client = cluster.client()
    tasks = n_events // 14  # a map task costs about 14 events
    client.gather(client.map(abs, range(tasks)))
    return cluster


def build_seconds(cluster: Cluster) -> float:
    t0 = time.perf_counter()
    tl = Timeline(cluster, live=False)
    elapsed = time.perf_counter() - t0
    tl.close()
    return elapsed


def first_render_ms(html_path: Path) -> list[float]:
    sys.path.insert(0, str(TESTS / "browser"))
    from lab import browser

    times = []
    with browser() as b:
        for _ in range(3):
            context = b.new_context(offline=True)
            page = context.new_page()
            page.set_default_timeout(120_000)
            idle: list[float] = []

            def on_console(message, idle=idle):
                if "document idle" in message.text:
                    idle.append(time.perf_counter())

            page.on("console", on_console)
            t0 = time.perf_counter()
            page.goto(html_path.as_uri())
            page.wait_for_function("window.Bokeh && window.Bokeh.documents.length > 0")
            while not idle and time.perf_counter() - t0 < 120:
                page.wait_for_timeout(20)
            times.append((idle[0] - t0) * 1000)
            context.close()
    return times


LOOP = """
import time
deadline = time.monotonic() + {seconds}
n = 0
while time.monotonic() < deadline:
    x = client.scatter(123)
    del x
    n += 1
print("iterations", n / {seconds})
"""


def live_rates(seconds: float) -> tuple[list[float], list[float], list[float]]:
    from jupyter_client.manager import start_new_kernel

    sys.path.insert(0, str(TESTS))
    from helpers import is_patch
    from helpers import run as run_cell

    km, kc = start_new_kernel(kernel_name="python3")

    def run(code: str) -> list[dict]:
        return run_cell(kc, code, timeout=300)

    def rate(msgs: list[dict]) -> float:
        text = "".join(m["content"].get("text", "") for m in msgs if m["msg_type"] == "stream")
        return float(text.split("iterations")[1].split()[0])

    plain, traced, patches = [], [], []
    try:
        run("from jupyter_refs import Cluster\nfrom jupyter_refs.views.timeline import Timeline\n"
            "cluster = Cluster(network='live')\nclient = cluster.client()")
        for _ in range(3):
            plain.append(rate(run(LOOP.format(seconds=seconds))))
            msgs = run("tl = Timeline(cluster)\ndisplay(tl)\n" + LOOP.format(seconds=seconds))
            traced.append(rate(msgs))
            n = sum(1 for m in msgs if is_patch(m))
            patches.append(n / seconds)
            run("tl.close()")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return plain, traced, patches


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()

    cluster = trace_of(args.events)
    n = len(cluster.trace)
    builds = [build_seconds(cluster) for _ in range(3)]
    print(f"views: timeline build, {n} events       median {statistics.median(builds):6.2f} s "
          f"(target <= 2 s; runs {', '.join(f'{b:.2f}' for b in builds)})")
    if not args.no_browser:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "timeline.html"
            t0 = time.perf_counter()
            export(cluster, str(path))
            print(f"views: standalone HTML export             {time.perf_counter() - t0:6.2f} s "
                  f"({path.stat().st_size / 1e6:.1f} MB)")
            renders = first_render_ms(path)
            print(f"views: first render in Chromium, {n} events  median {statistics.median(renders):6.0f} ms "
                  f"(runs {', '.join(f'{r:.0f}' for r in renders)})")
    plain, traced, patches = live_rates(args.seconds)
    p, t = statistics.median(plain), statistics.median(traced)
    print(f"views: live loop without timeline          median {p:8.0f} iterations/s")
    print(f"views: live loop with a live timeline      median {t:8.0f} iterations/s "
          f"({(1 - t / p) * 100:+.0f}% slower; target <= 20%)")
    print(f"views: timeline updates reaching iopub     median {statistics.median(patches):8.1f} per s "
          f"(target >= 5)")


if __name__ == "__main__":
    main()
