/**
 * A static timeline drawn from a saved-trace bundle: plain SVG, no kernel, no bokeh.
 *
 * It mirrors the live bokeh figure glyph for glyph (state bars on key lanes,
 * refcount steps, message arrows with a bar on their channel's lane, event
 * markers, red crosses on violations), each with a hover title, so a notebook
 * handed out with no kernel still shows which message overtook which.
 */

import { ITraceBundle, rowsAbout } from './bundle';

const SVG_NS = 'http://www.w3.org/2000/svg';
const ROW = 26; // px per lane
const LABEL_W = 230; // px for lane names
const PAD = { top: 8, right: 16, bottom: 30 };
const WIDTH = 960;

export interface IRenderOptions {
  /** Show only what is about this key (null: everything). */
  key?: string | null;
  /** Called when the user picks a key in the timeline's own key box. */
  onKey?: (key: string | null) => void;
}

type Attrs = Record<string, string | number>;

function svg(tag: string, attrs: Attrs, title?: string): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    el.setAttribute(k, String(v));
  }
  if (title) {
    const t = document.createElementNS(SVG_NS, 'title');
    t.textContent = title;
    el.appendChild(t);
  }
  return el;
}

function html<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  el.className = cls;
  if (text !== undefined) {
    el.textContent = text;
  }
  return el;
}

/** The x range every glyph fits in. */
export function xExtent(b: ITraceBundle): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  const take = (xs: number[]) => {
    for (const x of xs) {
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
  };
  take(b.events.x);
  take(b.messages.x0);
  take(b.messages.x1);
  take(b.states.left);
  take(b.states.right);
  take(b.violations.x);
  take(b.pending.x1);
  if (lo === Infinity) {
    return [0, 1];
  }
  return lo === hi ? [lo - 0.5, hi + 0.5] : [lo, hi];
}

/** Counts of what a render draws: what the tests and the header read. */
export interface IDrawn {
  events: number;
  messages: number;
  states: number;
  violations: number;
  lanes: number;
}

/** Draw `b` into a new element. */
export function renderTimeline(b: ITraceBundle, options: IRenderOptions = {}): HTMLElement {
  const key = options.key ?? null;
  const root = html('div', 'jp-RefsTimeline');
  root.dataset.timelineId = b.timeline_id ?? '';
  root.dataset.key = key ?? '';
  const drawn: IDrawn = { events: 0, messages: 0, states: 0, violations: 0, lanes: b.lanes.length };

  // Lanes of keys other than the chosen one are left out; actors and channels stay.
  const shownLanes = b.lanes
    .map((lane, i) => ({ lane, i }))
    .filter(({ lane }) => key === null || lane.group !== 2 || lane.name === `key ${key}`);
  const pos = new Map<number, number>(shownLanes.map(({ i }, p) => [i, p]));
  drawn.lanes = shownLanes.length;
  const height = PAD.top + ROW * shownLanes.length + PAD.bottom;
  const [x0, x1] = xExtent(b);
  const plotW = WIDTH - LABEL_W - PAD.right;
  const X = (x: number) => LABEL_W + ((x - x0) / (x1 - x0)) * plotW;
  const Y = (lane: number, off = 0) => PAD.top + ROW * ((pos.get(lane) ?? 0) + 0.5) - off * ROW;
  const shown = (lane: number) => pos.has(lane);

  const plot = svg('svg', {
    class: 'jp-RefsTimeline-plot',
    viewBox: `0 0 ${WIDTH} ${height}`,
    width: '100%',
    preserveAspectRatio: 'xMinYMin meet',
    role: 'img'
  });
  plot.setAttribute('aria-label', `timeline: ${b.title}`);
  const layer = (name: string) => {
    const g = svg('g', { class: `jp-RefsTimeline-${name}` });
    plot.appendChild(g);
    return g;
  };

  const lanes = layer('lanes');
  shownLanes.forEach(({ lane, i }) => {
    const y = Y(i);
    lanes.appendChild(svg('line', { x1: LABEL_W, x2: WIDTH - PAD.right, y1: y, y2: y, stroke: '#d0d7de', 'stroke-width': 1 }));
    const label = svg('text', { x: LABEL_W - 6, y: y + 4, 'text-anchor': 'end', 'font-size': 11 }, lane.name);
    label.appendChild(document.createTextNode(lane.name.length > 34 ? `${lane.name.slice(0, 33)}…` : lane.name));
    lanes.appendChild(label);
  });

  const states = layer('states');
  for (const i of rowsAbout(b.states.key, key)) {
    const lane = b.states.lane[i];
    if (!shown(lane)) continue;
    const left = X(b.states.left[i]);
    states.appendChild(
      svg('rect', {
        x: left, y: Y(lane, 0.42), width: Math.max(1, X(b.states.right[i]) - left), height: 0.84 * ROW,
        fill: b.states.color[i], 'fill-opacity': 0.55
      }, `${b.states.key[i]}: ${b.states.state[i]}`)
    );
    drawn.states++;
  }

  const refcounts = layer('refcounts');
  for (let i = 0; i < b.refcounts.x0.length; i++) {
    const lane = b.refcounts.lane[i];
    if (!shown(lane)) continue;
    refcounts.appendChild(
      svg('line', {
        x1: X(b.refcounts.x0[i]), x2: X(b.refcounts.x1[i]), y1: Y(lane, b.refcounts.off0[i]),
        y2: Y(lane, b.refcounts.off1[i]), stroke: b.refcounts.color[i], 'stroke-width': 2
      }, `refcount of ${b.refcounts.client[i]}`)
    );
  }

  const opColor = (op: string) => b.colors.op[op] ?? b.colors.default;
  const messages = layer('messages');
  for (const i of rowsAbout(b.messages.keys, key, true)) {
    const m = b.messages;
    if (!shown(m.lane0[i]) || !shown(m.lane1[i])) continue;
    const color = opColor(m.op[i]);
    const tip = `${m.desc[i]}\nkeys: ${m.keys[i]}\nsent at event ${m.seq0[i]}, received at ${m.seq1[i]}`;
    if (shown(m.chan[i])) {
      const yc = Y(m.chan[i]);
      messages.appendChild(svg('line', { x1: X(m.x0[i]), x2: X(m.x1[i]), y1: yc, y2: yc, stroke: color, 'stroke-width': 6, 'stroke-opacity': 0.6 }, tip));
    }
    const xa = X(m.x0[i]);
    const xb = X(m.x1[i]);
    const ya = Y(m.lane0[i]);
    const yb = Y(m.lane1[i]);
    const g = svg('g', { class: 'jp-RefsTimeline-message', 'data-op': m.op[i] }, tip);
    g.appendChild(svg('line', { x1: xa, x2: xb, y1: ya, y2: yb, stroke: color, 'stroke-width': 1.5 }));
    const dir = yb > ya ? 1 : yb < ya ? -1 : 0;
    const head = dir === 0 ? `${xb},${yb} ${xb - 7},${yb - 4} ${xb - 7},${yb + 4}` : `${xb},${yb} ${xb - 4},${yb - 7 * dir} ${xb + 4},${yb - 7 * dir}`;
    g.appendChild(svg('polygon', { points: head, fill: color }));
    messages.appendChild(g);
    drawn.messages++;
  }

  const pending = layer('pending');
  for (let i = 0; i < b.pending.x0.length; i++) {
    const lane = b.pending.lane[i];
    if (!shown(lane)) continue;
    pending.appendChild(svg('line', {
      x1: X(b.pending.x0[i]), x2: X(b.pending.x1[i]), y1: Y(lane), y2: Y(lane),
      stroke: opColor(b.pending.op[i]), 'stroke-width': 2, 'stroke-dasharray': '5 3'
    }, b.pending.desc[i]));
  }

  const events = layer('events');
  for (const i of rowsAbout(b.events.key, key)) {
    const e = b.events;
    if (!shown(e.lane[i])) continue;
    const cell = e.cell[i] ? `\nline: ${e.cell[i]}` : '';
    events.appendChild(svg('circle', {
      cx: X(e.x[i]), cy: Y(e.lane[i]), r: 3, fill: b.colors.kind[e.kind[i]] ?? b.colors.default,
      'data-kind': e.kind[i]
    }, `event ${e.seq[i]}: ${e.desc[i]}${e.key[i] ? `\nkey: ${e.key[i]}` : ''}${cell}`));
    drawn.events++;
  }

  const violations = layer('violations');
  for (const i of rowsAbout(b.violations.key, key)) {
    const v = b.violations;
    if (!shown(v.lane[i])) continue;
    const x = X(v.x[i]);
    const y = Y(v.lane[i]);
    const g = svg('g', { class: 'jp-RefsTimeline-violation', 'data-name': v.name[i] },
      `VIOLATION ${v.name[i]} on ${v.key[i]}\nfirst event: ${v.first_seq[i]}\nwhy: ${v.explanation[i]}`);
    g.appendChild(svg('path', { d: `M${x - 8},${y - 8}L${x + 8},${y + 8}M${x - 8},${y + 8}L${x + 8},${y - 8}`, stroke: '#e31a1c', 'stroke-width': 4 }));
    violations.appendChild(g);
    drawn.violations++;
  }

  // An x axis: five ticks, in seq or ms.
  const axis = layer('axis');
  const yAxis = height - PAD.bottom + 4;
  for (let t = 0; t <= 4; t++) {
    const x = x0 + ((x1 - x0) * t) / 4;
    const label = svg('text', { x: X(x), y: yAxis + 12, 'text-anchor': 'middle', 'font-size': 10, fill: '#57606a' });
    label.textContent = b.view === 'logical' ? String(Math.round(x)) : `${x.toFixed(1)} ms`;
    axis.appendChild(label);
  }
  const axisTitle = svg('text', { x: LABEL_W + plotW / 2, y: yAxis + 25, 'text-anchor': 'middle', 'font-size': 10, fill: '#57606a' });
  axisTitle.textContent = b.view === 'logical' ? 'event seq (logical order)' : 'time (ms)';
  axis.appendChild(axisTitle);

  root.appendChild(header(b, drawn, key, options.onKey));
  root.appendChild(plot);
  root.dataset.drawn = JSON.stringify(drawn);
  return root;
}

function header(b: ITraceBundle, drawn: IDrawn, key: string | null, onKey?: (key: string | null) => void): HTMLElement {
  const head = html('div', 'jp-RefsTimeline-header');
  head.appendChild(html('span', 'jp-RefsTimeline-title', b.title));
  const w = b.window;
  const part = w.first > 0 || w.next < w.total
    ? `events ${w.first}–${w.next - 1} of ${w.total}` : `${w.total} events`;
  const viol = b.violations.x.length;
  head.appendChild(html('span', 'jp-RefsTimeline-summary',
    `${part}${w.dropped ? `, ${w.dropped} dropped` : ''}; ${viol} violation${viol === 1 ? '' : 's'} · saved trace (no kernel needed)`));
  if (onKey && b.seen_keys.length) {
    const select = html('select', 'jp-RefsTimeline-key');
    select.title = 'show only one key';
    const all = html('option', '', 'all keys');
    all.value = '';
    select.appendChild(all);
    for (const k of b.seen_keys) {
      const option = html('option', '', k);
      option.value = k;
      select.appendChild(option);
    }
    select.value = key ?? '';
    select.addEventListener('change', () => onKey(select.value || null));
    head.appendChild(select);
  }
  if (key !== null && drawn.events === 0 && drawn.messages === 0) {
    head.appendChild(html('span', 'jp-RefsTimeline-empty', `nothing about ${key} in this trace`));
  }
  return head;
}
