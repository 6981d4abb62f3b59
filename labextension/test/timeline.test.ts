/**
 * The static timeline, drawn from bundles the Python side really writes: the
 * fixtures are made in beforeAll by running race #8576 on the kernel-side
 * cluster (legacy and fixed), so a change of format on either side fails here.
 */

import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';

import { checkBundle, ITraceBundle, rowsAbout } from '../src/bundle';
import { StaticTimeline } from '../src/static';
import { renderTimeline, xExtent } from '../src/timeline';

const PYTHON = process.env.PYTHON ?? 'python';
const MAKE = `
import json, sys
from jupyter_refs.demo import scatter_race
from jupyter_refs.views.saved import trace_bundle
out = {}
for protocol in ("legacy", "fixed"):
    cluster = scatter_race(protocol, seed=1, iterations=40).cluster
    out[protocol] = trace_bundle(cluster.trace, title=protocol)
    out[protocol + "_small"] = trace_bundle(cluster.trace, title=protocol, max_events=100)
json.dump(out, sys.stdout)
`;

let bundles: Record<string, ITraceBundle>;

beforeAll(() => {
  bundles = JSON.parse(execFileSync(PYTHON, ['-c', MAKE], { maxBuffer: 64 << 20 }).toString());
});

const count = (root: Element, selector: string) => root.querySelectorAll(selector).length;

describe('renderTimeline', () => {
  it('draws every lane, event, message and violation of a legacy race', () => {
    const b = bundles.legacy;
    expect(b.violations.x.length).toBeGreaterThan(0); // the race happened
    const root = renderTimeline(b);
    expect(count(root, '.jp-RefsTimeline-lanes line')).toBe(b.lanes.length);
    expect(count(root, '.jp-RefsTimeline-events circle')).toBe(b.events.x.length);
    expect(count(root, '.jp-RefsTimeline-message')).toBe(b.messages.x0.length);
    expect(count(root, '.jp-RefsTimeline-violation')).toBe(b.violations.x.length);
    expect(count(root, '.jp-RefsTimeline-states rect')).toBe(b.states.left.length);
    const labels = Array.from(root.querySelectorAll('.jp-RefsTimeline-lanes text title')).map(t => t.textContent);
    expect(labels).toEqual(b.lanes.map(l => l.name));
    expect(labels).toContain('scheduler');
  });

  it('says why each violation broke, on hover', () => {
    const b = bundles.legacy;
    const titles = Array.from(renderTimeline(b).querySelectorAll('.jp-RefsTimeline-violation > title'))
      .map(t => t.textContent ?? '');
    expect(titles).toHaveLength(b.violations.x.length);
    titles.forEach((t, i) => {
      expect(t).toContain(`VIOLATION ${b.violations.name[i]} on ${b.violations.key[i]}`);
      expect(t).toContain(b.violations.explanation[i]);
    });
  });

  it('colours messages by op and places each arrow from its send to its receipt', () => {
    const b = bundles.legacy;
    const root = renderTimeline(b);
    const groups = Array.from(root.querySelectorAll('.jp-RefsTimeline-message'));
    const releases = groups.filter(g => g.getAttribute('data-op') === 'client-releases-keys');
    expect(releases.length).toBe(b.messages.op.filter(op => op === 'client-releases-keys').length);
    const line = releases[0].querySelector('line')!;
    expect(line.getAttribute('stroke')).toBe(b.colors.op['client-releases-keys']);
    for (const g of groups) {
      const l = g.querySelector('line')!;
      expect(Number(l.getAttribute('x2'))).toBeGreaterThanOrEqual(Number(l.getAttribute('x1')));
    }
  });

  it('filters to one key: only what is about it, and only its key lane', () => {
    const b = bundles.legacy;
    const key = b.violations.key[0];
    const root = renderTimeline(b, { key });
    expect(root.dataset.key).toBe(key);
    expect(count(root, '.jp-RefsTimeline-events circle')).toBe(rowsAbout(b.events.key, key).length);
    expect(count(root, '.jp-RefsTimeline-violation')).toBe(b.violations.key.filter(k => k === key).length);
    const keyLanes = Array.from(root.querySelectorAll('.jp-RefsTimeline-lanes text title'))
      .map(t => t.textContent ?? '').filter(n => n.startsWith('key '));
    expect(keyLanes).toEqual([`key ${key}`]);
    expect(count(root, '.jp-RefsTimeline-events circle')).toBeLessThan(b.events.x.length);
  });

  it('says so when the chosen key is not in the trace', () => {
    const root = renderTimeline(bundles.legacy, { key: 'no-such-key' });
    expect(count(root, '.jp-RefsTimeline-events circle')).toBe(0);
    expect(root.querySelector('.jp-RefsTimeline-empty')?.textContent).toContain('no-such-key');
  });

  it('draws no violation for the fixed protocol', () => {
    const b = bundles.fixed;
    expect(b.events.x.length).toBeGreaterThan(0);
    const root = renderTimeline(b);
    expect(count(root, '.jp-RefsTimeline-violation')).toBe(0);
    expect(root.querySelector('.jp-RefsTimeline-summary')?.textContent).toContain('0 violations');
  });

  it('tells how much of a long trace the bundle holds, and keeps the violation in it', () => {
    const b = bundles.legacy_small;
    expect(b.window.next - b.window.first).toBe(100);
    expect(b.violations.x.length).toBeGreaterThan(0);
    const summary = renderTimeline(b).querySelector('.jp-RefsTimeline-summary')!.textContent!;
    expect(summary).toContain(`events ${b.window.first}–${b.window.next - 1} of ${b.window.total}`);
  });

  it('keeps every glyph inside the plot', () => {
    const b = bundles.legacy;
    const [lo, hi] = xExtent(b);
    expect(lo).toBeLessThan(hi);
    const root = renderTimeline(b);
    for (const c of Array.from(root.querySelectorAll('.jp-RefsTimeline-events circle'))) {
      const x = Number(c.getAttribute('cx'));
      expect(x).toBeGreaterThanOrEqual(230);
      expect(x).toBeLessThanOrEqual(960);
    }
  });
});

describe('the key box and bad bundles', () => {
  it('offers the trace keys and reports a pick', () => {
    const picked: (string | null)[] = [];
    const root = renderTimeline(bundles.legacy, { onKey: k => picked.push(k) });
    const select = root.querySelector('select')!;
    expect(Array.from(select.options).slice(1).map(o => o.value)).toEqual(bundles.legacy.seen_keys);
    select.value = bundles.legacy.seen_keys[0];
    select.dispatchEvent(new Event('change'));
    select.value = '';
    select.dispatchEvent(new Event('change'));
    expect(picked).toEqual([bundles.legacy.seen_keys[0], null]);
  });

  it('refuses a bundle of another version, or a broken one, in words', () => {
    expect(checkBundle({ ...bundles.legacy, version: 99 })).toMatch(/version 99/);
    expect(checkBundle({ version: 1 })).toMatch(/no "lanes"/);
    expect(checkBundle('x')).toMatch(/not a JSON object/);
    expect(checkBundle(bundles.legacy)).toBeNull();
    const view = new StaticTimeline();
    view.bundle = { version: 2 };
    expect(view.node.textContent).toMatch(/cannot draw this saved trace: saved trace version 2/);
    view.bundle = bundles.fixed;
    expect(view.node.querySelector('svg')).not.toBeNull();
  });
});
