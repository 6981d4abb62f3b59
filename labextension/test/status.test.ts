/**
 * What the sidebar says instead of a table, from the feed the kernel really sends
 * (`jupyter_refs.views.lab.refs_message`): once the cluster is closed it says so, in the
 * kernel's words, instead of "no cluster yet" (issue 46.6).
 */

import { execFileSync } from 'node:child_process';
import { beforeAll, expect, it } from 'vitest';

import type { IRefs, KernelLink } from '../src/link';
import { statusText } from '../src/status';

const PYTHON = process.env.PYTHON ?? 'python';
const MAKE = `
import json, sys
from jupyter_refs import Cluster
from jupyter_refs.views.lab import refs_message
cluster = Cluster(protocol="dask", network="immediate")
cluster.close()
json.dump({"none": refs_message(None), "closed": refs_message(cluster)}, sys.stdout)
`;

let feed: { none: IRefs; closed: IRefs };

beforeAll(() => {
  feed = JSON.parse(execFileSync(PYTHON, ['-c', MAKE]).toString());
});

function loaded(refs: IRefs): KernelLink {
  return { status: 'loaded', refs } as unknown as KernelLink;
}

it('says there is no cluster yet before the first one', () => {
  expect(statusText(loaded(feed.none))).toMatch(/^This kernel has no cluster yet\. Start one with %cluster/);
});

it('says the cluster was closed, not that there is none yet', () => {
  const text = statusText(loaded(feed.closed))!;
  expect(text).toMatch(/^The cluster \(protocol=dask network=immediate\) was closed\. Start another with %cluster/);
  expect(text).not.toMatch(/yet/);
});
