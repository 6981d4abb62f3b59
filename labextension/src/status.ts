/**
 * What the sidebar says instead of a table: no notebook, no kernel, the extension not
 * loaded, no cluster yet — or the cluster closed (its tracer detached), in the kernel's
 * words.  Apart from the sidebar so that it can be tested without a DOM that Lumino's
 * widgets need.
 */

import type { KernelLink } from './link';

/** What to say instead of a table, or null when there is a table to show. */
export function statusText(link: KernelLink | null): string | null {
  if (link === null) return 'Open a notebook to see the references its cluster holds.';
  switch (link.status) {
    case 'no-kernel':
      return 'This notebook has no running kernel. Start one, then run %load_ext jupyter_refs.';
    case 'probing':
      return 'Asking the kernel…';
    case 'not-loaded':
      return 'jupyter_refs is not loaded in this kernel. Run %load_ext jupyter_refs in a cell.';
  }
  if (link.refs === null || link.refs.cluster === null) {
    const how = '%cluster (or %cluster --attach NAME for dask)';
    const ended = link.refs?.ended;  // the kernel's words: closed, or detached
    if (ended) return `${ended[0].toUpperCase()}${ended.slice(1)}. Start another with ${how}.`;
    return `This kernel has no cluster yet. Start one with ${how}.`;
  }
  return null;
}
