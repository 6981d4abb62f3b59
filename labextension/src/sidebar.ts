/**
 * The refs sidebar: what the active notebook's kernel believes about every key.
 *
 * It follows the notebook in focus, shows the refs its kernel's feed sends
 * (client refcounts and future states, scheduler state, who_wants, where the
 * data is, the checks' verdict) and says plainly when there is nothing to show:
 * no notebook, no kernel, the extension not loaded, no cluster yet, or the
 * cluster closed (its tracer detached), as the kernel words it.  Clicking a
 * key filters the notebook's timelines to it — the live ones through the
 * kernel, the saved ones here; clicking it again shows every key.  A key's
 * "trace only this key" button narrows the running trace itself (the kernel's
 * ``focus``: every other key goes unrecorded, on the scheduler and the workers
 * too); "trace all keys" undoes it.
 */

import { Widget } from '@lumino/widgets';

import { goneLines } from './gone';
import { KeyFilter } from './keyfilter';
import { IRefs, IRefsRow, KernelLink } from './link';
import { statusText } from './status';

const STATE_CLASS: Record<string, string> = {
  finished: 'ok', memory: 'ok', pending: 'muted', borrowed: 'muted', released: 'muted',
  lost: 'warn', cancelled: 'bad', error: 'bad', forgotten: 'bad'
};

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls = '', text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function state(text: string): HTMLElement {
  const cls = text.endsWith('(ghost)') ? 'ghost' : STATE_CLASS[text] ?? '';
  return el('span', `jp-RefsSidebar-state ${cls ? `jp-RefsSidebar-${cls}` : ''}`, text);
}

export class RefsSidebar extends Widget {
  private _link: KernelLink | null = null;
  private _head = el('div', 'jp-RefsSidebar-head');
  private _body = el('div', 'jp-RefsSidebar-body');

  constructor(private _filters: KeyFilter) {
    super();
    this.id = 'jupyter-refs-sidebar';
    this.addClass('jp-RefsSidebar');
    this.title.caption = 'jupyter_refs: references of the kernel’s cluster';
    this.node.append(this._head, this._body);
    _filters.changed.connect(() => this.render());
    this.render();
  }

  /** Show `link`'s notebook from now on (null: no notebook in focus). */
  follow(link: KernelLink | null): void {
    if (this._link === link) return;
    this._link?.changed.disconnect(this.render, this);
    this._link = link;
    link?.changed.connect(this.render, this);
    this.render();
  }

  get link(): KernelLink | null {
    return this._link;
  }

  render(): void {
    const link = this._link;
    this._head.replaceChildren(el('div', 'jp-RefsSidebar-title', 'References'));
    if (link) {
      const name = el('div', 'jp-RefsSidebar-notebook', link.panel.context.localPath);
      this._head.appendChild(name);
    }
    const said = statusText(link);
    this.node.dataset.status = link?.status ?? 'no-notebook';
    if (said !== null || link === null || link.refs === null) {
      this._body.replaceChildren(el('p', 'jp-RefsSidebar-message', said ?? ''));
      return;
    }
    this._body.replaceChildren(...this._content(link, link.refs));
  }

  private _content(link: KernelLink, refs: IRefs): HTMLElement[] {
    const c = refs.cluster!;
    const session = link.panel.id;
    const chosen = this._filters.get(session);
    const out: HTMLElement[] = [];
    out.push(el('div', 'jp-RefsSidebar-cluster',
      `${c.title} · ${c.events} events${c.dropped ? ` (${c.dropped} dropped)` : ''} · ${c.violations} violation${c.violations === 1 ? '' : 's'}`));
    for (const line of goneLines(c)) {
      out.push(el('div', 'jp-RefsSidebar-gone', line));
    }
    if (refs.error) {
      out.push(el('p', 'jp-RefsSidebar-message jp-RefsSidebar-bad', refs.error));
    }
    if (c.focus) {
      const bar = el('div', 'jp-RefsSidebar-focused', `tracing only ${c.focus} `);
      const all = el('button', 'jp-RefsSidebar-unfocus', 'trace all keys');
      all.title = 'record every key again, from now on';
      all.onclick = () => link.focus(null);
      bar.appendChild(all);
      out.push(bar);
    }
    if (refs.violations.length) {
      const list = el('ul', 'jp-RefsSidebar-violations');
      for (const v of refs.violations.slice(-5)) {
        const item = el('li', '', `✗ ${v.name} on ${v.key} (event ${v.first_seq})`);
        item.title = v.explanation;
        list.appendChild(item);
      }
      out.push(list);
    }
    if (chosen !== null) {
      const bar = el('div', 'jp-RefsSidebar-filter', `timelines show only ${chosen} `);
      const clear = el('button', 'jp-RefsSidebar-clear', 'show all keys');
      clear.onclick = () => this._choose(link, null);
      bar.appendChild(clear);
      out.push(bar);
    }
    if (!refs.rows.length) {
      out.push(el('p', 'jp-RefsSidebar-message', 'No keys yet: scatter or submit something.'));
      return out;
    }
    const list = el('div', 'jp-RefsSidebar-keys');
    for (const row of refs.rows) {
      list.appendChild(this._row(link, row, row.key === chosen));
    }
    out.push(list);
    if (refs.more) {
      out.push(el('p', 'jp-RefsSidebar-message', `and ${refs.more} more keys`));
    }
    return out;
  }

  /**
   * One key as a small card (a sidebar is narrow): the key and the verdict, then a
   * line per client (refcount, future state), then what the scheduler believes.
   */
  private _row(link: KernelLink, row: IRefsRow, chosen: boolean): HTMLElement {
    const broken = row.violations.length > 0;
    const card = el('div', `jp-RefsSidebar-row${chosen ? ' jp-mod-selected' : ''}${broken ? ' jp-RefsSidebar-broken' : ''}`);
    card.dataset.key = row.key;
    card.title = chosen ? 'click to show every key again' : `click to show only ${row.key} in this notebook's timelines`;
    card.onclick = () => this._choose(link, chosen ? null : row.key);
    const head = card.appendChild(el('div', 'jp-RefsSidebar-rowhead'));
    head.appendChild(el('code', 'jp-RefsSidebar-key', row.key));
    head.appendChild(el('span', broken ? 'jp-RefsSidebar-bad' : 'jp-RefsSidebar-ok',
      broken ? `✗ ${row.violations.join(', ')}` : '✓'));
    const clients = Object.entries(row.clients);
    for (const [client, [count, st]] of clients) {
      const line = card.appendChild(el('div', 'jp-RefsSidebar-line', `${client} refcount ${count} `));
      line.appendChild(state(st));
    }
    if (!clients.length) {
      card.appendChild(el('div', 'jp-RefsSidebar-line jp-RefsSidebar-muted', 'no client holds it'));
    }
    const sched = card.appendChild(el('div', 'jp-RefsSidebar-line', 'scheduler '));
    sched.appendChild(state(row.scheduler));
    sched.appendChild(document.createTextNode(
      ` · who_wants ${row.who_wants.join(', ') || '∅'} · on ${row.on_workers.join(', ') || 'no worker'}`));
    const only = card.appendChild(el('button', 'jp-RefsSidebar-focus', 'trace only this key'));
    only.title = `from now on, record only ${row.key} (on the scheduler and the workers too)`;
    only.onclick = event => {
      event.stopPropagation(); // not a click on the card: that filters the timelines
      link.focus(row.key);
    };
    return card;
  }

  private _choose(link: KernelLink, key: string | null): void {
    this._filters.set(link.panel.id, key);
    link.filter(key);
  }
}
