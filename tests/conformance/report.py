"""Run the conformance programs and write ``docs/conformance.md`` (or print it).

    python tests/conformance/report.py                     # the report, on stdout
    python tests/conformance/report.py docs/conformance.md # ... into a file
    python tests/conformance/report.py --dask-only --repeat 2 -k keys_   # check programs on dask
    python tests/conformance/report.py --show -k args_     # every observation, side by side
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "conformance"

from conformance import programs  # noqa: E402, F401 - registers the programs
from conformance.harness import AREAS, PROGRAMS, backend_factory, dask_version, run  # noqa: E402
from conformance.known import KNOWN, PENDING  # noqa: E402

NETWORKS = ["immediate", "live"]


def known_reason(name: str, network: str) -> str | None:
    return KNOWN.get(f"{name}[{network}]") or KNOWN.get(name)


def verdict(dask_obs, model_obs, name: str, network: str) -> str:
    if model_obs == dask_obs:
        return "identical"
    return "known" if known_reason(name, network) else "failing"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", help="write the markdown report here (default: stdout)")
    p.add_argument("-k", default="", help="only programs whose name contains this")
    p.add_argument("--dask-only", action="store_true", help="run on dask only (with --repeat: stability)")
    p.add_argument("--repeat", type=int, default=1, help="run on dask this many times; report changes")
    p.add_argument("--show", action="store_true", help="print every observation")
    args = p.parse_args(argv)

    names = [n for n in PROGRAMS if args.k in n]
    t0 = time.monotonic()
    dask_obs, unstable = {}, []
    for name in names:
        runs = [run(backend_factory("dask"), PROGRAMS[name]) for _ in range(args.repeat)]
        dask_obs[name] = runs[0]
        if any(r != runs[0] for r in runs[1:]):
            unstable.append(name)
            print(f"UNSTABLE {name}: {runs}", file=sys.stderr)
        if args.show:
            print(f"{name}\n  dask:      {runs[0]!r}", file=sys.stderr)
    t_dask = time.monotonic() - t0
    print(f"dask: {len(names)} programs x {args.repeat} in {t_dask:.1f} s; unstable: {unstable}",
          file=sys.stderr)
    if args.dask_only:
        return 1 if unstable else 0

    results: dict[tuple[str, str], tuple[str, object]] = {}
    for network in NETWORKS:
        t1 = time.monotonic()
        for name in names:
            obs = run(backend_factory(f"model-{network}"), PROGRAMS[name])
            results[name, network] = (verdict(dask_obs[name], obs, name, network), obs)
            if args.show:
                print(f"{name}\n  {network:10} {obs!r}", file=sys.stderr)
        print(f"model-{network}: {time.monotonic() - t1:.1f} s", file=sys.stderr)

    text = render(names, dask_obs, results)
    if args.out:
        text = keep_docs_section(args.out, text)
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def switch_section() -> str:
    """What the switch (``jupyter_refs.model()``, ``%cluster --model``) takes, and what stays
    loud: read from the switch itself (``dropin.MODEL``, ``dropin.KEPT``) and from the
    client's list of dask methods it lacks, so that it cannot go stale."""
    from jupyter_refs import dropin
    from jupyter_refs.client import _DASK_CLIENT_API, Client

    def names(xs) -> str:
        return ", ".join(f"`{x}`" for x in sorted(xs))

    lacking = sorted(n for n in _DASK_CLIENT_API if not hasattr(Client, n))
    others = [n for n in ("MultiLock", "Actor", "performance_report", "get_task_stream",
                          "MemorySampler", "Scheduler", "Worker", "Nanny")
              if n not in dropin.MODEL and n not in dropin.KEPT
              and n not in dropin._needing_distributed()]
    return (
        "Under `jupyter_refs.model()` (`%cluster --model`) dask's own lines run on the model "
        "unchanged: `Client()`, `Client(n_workers=…, threads_per_worker=…, processes=…)`, "
        "`LocalCluster(...)` (`resources=` included), `Client(cluster)`, and these names of "
        "`distributed`, `dask.distributed` and `distributed.diagnostics`: "
        f"{names({**dropin.MODEL, **dropin._needing_distributed()})}"
        f".  Kept as dask's own (data, a base class, an annotation): {names(dropin.KEPT)}.  "
        "(`tests/test_dropin*.py` and `tests/test_dask_docs.py` run dask's documented programs "
        "on real dask and under the switch, and compare what they give.)  What stays loud — "
        "`NotModelledError` naming it, never a silent difference: every other public name of "
        f"those modules ({names(others)}, …); the `Client` methods "
        f"{names(lacking)}; `LocalCluster.adapt`'s memory bounds, `worker_key` and "
        "`Adaptive` classes of one's own (memory is not measured, so it never scales); "
        "`get_worker_logs(nanny=True)` where workers have nannies; `profile`'s plots and the "
        "scheduler's and event loop's own profiles (`scheduler=`, `server=`); "
        "`performance_report`'s system, administrative-profile and bandwidth tabs (each says "
        "so in the page) and `async with`; on a stepped network (`immediate`, `manual`) "
        "`profile` and `adapt`, which need a clock; "
        "asynchronous clients (`asynchronous=True`, `await`; the model "
        "has no event loop to await on); actors; what a task's `get_worker()` (or `Client.run`'s "
        "`dask_worker`) has beyond `address`, `name`, `status`, `data`, `nthreads`, "
        "`get_current_task`, `log_event`, the transfer logs (those on the live network) and, of its "
        "`state`, the sizes of `ready` and `executing` and `nthreads`; "
        "a `WorkerPlugin`'s `transition` hook; `progress` "
        "in a notebook (its widget); `get_events` of the scheduler's own topics.  Names "
        "imported before the switch stay dask's.")


def render(names, dask_obs, results) -> str:
    lines = ["# Conformance: the kernel-side cluster against real dask", "",
             f"Generated by `tests/conformance/report.py`; distributed {dask_version()} "
             "(`LocalCluster(n_workers=2, threads_per_worker=1, processes=False)`), against "
             "`jupyter_refs.Cluster(workers=2)` on the `immediate` and `live` networks.",
             "A program is *identical* when the model's observation equals dask's on both networks,",
             "*known* when it differs only where the table of known differences says so,",
             "*failing* otherwise.",
             "", "| area | programs | identical | known differences | failing |",
             "| --- | ---: | ---: | ---: | ---: |"]
    totals = Counter()
    per_area: dict[str, list[str]] = {}
    for name in names:
        per_area.setdefault(PROGRAMS[name].area, []).append(name)
    status: dict[str, str] = {}
    for name in names:
        vs = {results[name, n][0] for n in NETWORKS}
        status[name] = "failing" if "failing" in vs else "known" if "known" in vs else "identical"
    for area in AREAS:
        ns = per_area.get(area, [])
        if not ns:
            continue
        c = Counter(status[n] for n in ns)
        totals.update(c)
        totals["programs"] += len(ns)
        lines.append(f"| {AREAS[area]} (`{area}_`) | {len(ns)} | {c['identical']} | {c['known']} | "
                     f"{c['failing']} |")
    lines.append(f"| **all** | **{totals['programs']}** | **{totals['identical']}** | "
                 f"**{totals['known']}** | **{totals['failing']}** |")
    lines += ["", "## Known differences", ""]
    if KNOWN:
        lines += ["| program | reason |", "| --- | --- |"]
        lines += [f"| `{k}` | {v} |" for k, v in sorted(KNOWN.items())]
    else:
        lines.append("None: every difference is a failure.")
    lines += ["", "## Not yet conformant (failing, expected to fail until fixed)", "",
              "| program | what is missing |", "| --- | --- |"]
    lines += [f"| `{k}` | {v} |" for k, v in sorted(PENDING.items())]
    lines += ["", "## dask's own code: the switch", "", switch_section()]
    lines += ["", "## Programs", "", "| program | immediate | live |", "| --- | --- | --- |"]
    for name in names:
        lines.append(f"| `{name}` | {results[name, 'immediate'][0]} | {results[name, 'live'][0]} |")
    failing = [n for n in names if status[n] == "failing"]
    if failing:
        lines += ["", "## What differs", ""]
        for name in failing:
            lines.append(f"- `{name}`: dask `{_short(dask_obs[name])}`")
            for n in NETWORKS:
                if results[name, n][0] == "failing":
                    lines.append(f"  - {n}: `{_short(results[name, n][1])}`")
    return "\n".join(lines) + "\n"


def keep_docs_section(path: str, text: str) -> str:
    """The file's section on dask's documentation stays: ``tests/test_dask_docs.py`` writes it,
    from a run of its own."""
    heading = "## dask's documentation under the switch\n"
    try:
        with open(path) as f:
            old = f.read()
    except FileNotFoundError:
        return text
    start = old.find(heading)
    at = text.find("## Programs\n")
    if start < 0 or at < 0:
        return text
    end = old.find("\n## ", start)
    section = (old[start:end] if end >= 0 else old[start:]).rstrip("\n") + "\n\n"
    return text[:at] + section + text[at:]


def _short(obs, limit: int = 160) -> str:
    text = repr(obs).replace("|", "\\|").replace("`", "'")
    return text if len(text) <= limit else text[:limit] + "…"


if __name__ == "__main__":
    sys.exit(main())
