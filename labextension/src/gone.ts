/**
 * The workers a cluster's scheduler removed, in words: what the sidebar says under the
 * cluster's line, as the refs table and the timeline's "(gone)" lanes do.  Apart from
 * the sidebar so that it can be tested without a DOM that Lumino's widgets need.
 */

import type { IRefs } from './link';

/** A line per worker the scheduler removed, with why: "gone: worker:… (retired)". */
export function goneLines(cluster: NonNullable<IRefs['cluster']>): string[] {
  return Object.entries(cluster.gone ?? {}).map(([worker, why]) => `gone: ${worker} (${why})`);
}
