/**
 * The saved-trace MIME bundle, as `jupyter_refs/views/saved.py` writes it.
 *
 * The kernel lays the trace out with the same model its live bokeh timeline
 * uses (lanes top to bottom, x = event seq or time in ms), so this side only
 * reads columns and draws: the saved picture cannot drift from the live one.
 */

export const TRACE_MIME = 'application/vnd.jupyter-refs.trace+json';
export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
export const SUPPORTED_VERSION = 1;

export interface ILane {
  name: string;
  /** 0 actors, 1 channels, 2 keys */
  group: number;
}

export interface ITraceBundle {
  version: number;
  timeline_id: string | null;
  title: string;
  view: 'logical' | 'wall';
  keys: string[] | null;
  window: { first: number; next: number; total: number; dropped: number };
  lanes: ILane[];
  events: { x: number[]; lane: number[]; kind: string[]; seq: number[]; key: (string | null)[]; desc: string[]; cell: string[] };
  messages: {
    x0: number[]; x1: number[]; lane0: number[]; lane1: number[]; chan: number[]; op: string[];
    msg_id: number[]; keys: string[]; desc: string[]; seq0: number[]; seq1: number[];
  };
  states: { left: number[]; right: number[]; lane: number[]; state: string[]; color: string[]; key: string[] };
  refcounts: { x0: number[]; x1: number[]; lane: number[]; off0: number[]; off1: number[]; client: string[]; color: string[] };
  violations: { x: number[]; lane: number[]; name: string[]; key: string[]; explanation: string[]; first_seq: number[]; seq: number[] };
  pending: { x0: number[]; x1: number[]; lane: number[]; op: string[]; desc: string[] };
  seen_keys: string[];
  colors: { op: Record<string, string>; kind: Record<string, string>; state: Record<string, string>; default: string };
}

/** Why a bundle cannot be drawn, in words for the output area; null when it can. */
export function checkBundle(data: unknown): string | null {
  if (typeof data !== 'object' || data === null) {
    return 'the saved trace is not a JSON object';
  }
  const b = data as Partial<ITraceBundle>;
  if (b.version !== SUPPORTED_VERSION) {
    return `saved trace version ${String(b.version)}; this extension draws version ${SUPPORTED_VERSION}`;
  }
  for (const name of ['lanes', 'events', 'messages', 'states', 'refcounts', 'violations', 'pending', 'colors']) {
    if (typeof (b as Record<string, unknown>)[name] !== 'object') {
      return `the saved trace has no "${name}"`;
    }
  }
  return null;
}

/** Row indices of a column set whose key (or comma-joined keys) matches `key`; all rows for null. */
export function rowsAbout(keys: (string | null)[], key: string | null, joined = false): number[] {
  const out: number[] = [];
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (key === null || (k !== null && (joined ? k.split(',').includes(key) : k === key))) {
      out.push(i);
    }
  }
  return out;
}
