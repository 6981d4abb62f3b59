/**
 * The sidebar marks the workers the scheduler removed, from the feed the kernel really
 * sends: beforeAll retires one worker of a real in-process dask cluster under a tracer and
 * prints the refs message (`jupyter_refs.views.lab.refs_message`) the sidebar would get.
 */

import { execFileSync } from 'node:child_process';
import { beforeAll, expect, it } from 'vitest';

import { goneLines } from '../src/gone';
import type { IRefs } from '../src/link';

const PYTHON = process.env.PYTHON ?? 'python';
const MAKE = `
import json, sys, time
from distributed import Client, LocalCluster
from jupyter_refs.dask import attach
from jupyter_refs.views.lab import refs_message
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=":0") as cluster, Client(cluster) as client:
    with attach(client) as tracer:
        x = client.scatter(1, broadcast=True)
        before = refs_message(tracer)
        retiree = sorted(client.scheduler_info()["workers"])[0]
        client.retire_workers([retiree])
        deadline = time.monotonic() + 30
        while not tracer.gone and time.monotonic() < deadline:
            time.sleep(0.05)
        tracer.sync()
        json.dump({"before": before, "after": refs_message(tracer)}, sys.stdout)
`;

let feed: { before: IRefs; after: IRefs };

beforeAll(() => {
  feed = JSON.parse(execFileSync(PYTHON, ['-c', MAKE], { maxBuffer: 16 << 20 }).toString());
});

it('says nothing of workers while none is gone', () => {
  expect(goneLines(feed.before.cluster!)).toEqual([]);
});

it('names the retired worker and why, as the refs table does', () => {
  const lines = goneLines(feed.after.cluster!);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^gone: worker:\S+ \(retired\)$/);
});
