/**
 * A saved trace drawn in place: the static timeline of one bundle, redrawn when the
 * bundle is refreshed or its notebook's key filter changes.  Plain DOM, no Lumino,
 * so it is the same object in an output area and in a unit test.
 */

import { checkBundle, ITraceBundle } from './bundle';
import { renderTimeline } from './timeline';

/** Where a static timeline learns the key its notebook is filtered to. */
export interface IFilterSource {
  key(): string | null;
  setKey(key: string | null): void;
  onChange(callback: () => void): () => void;
}

const NO_FILTER: IFilterSource = { key: () => null, setKey: () => undefined, onChange: () => () => undefined };

/** The static view of one bundle, redrawn when its data or the notebook's key filter changes. */
export class StaticTimeline {
  readonly node: HTMLElement;
  private _bundle: ITraceBundle | null = null;
  private _disconnect: () => void;

  constructor(private _filter: IFilterSource = NO_FILTER) {
    this.node = document.createElement('div');
    this.node.className = 'jp-RefsStatic';
    this._disconnect = _filter.onChange(() => this.draw());
  }

  set bundle(data: unknown) {
    const problem = checkBundle(data);
    if (problem !== null) {
      this._bundle = null;
      this.node.textContent = `jupyter_refs: cannot draw this saved trace: ${problem}`;
      this.node.classList.add('jp-RefsStatic-error');
      return;
    }
    this.node.classList.remove('jp-RefsStatic-error');
    this._bundle = data as ITraceBundle;
    this.draw();
  }

  draw(): void {
    if (this._bundle === null) {
      return;
    }
    const key = this._filter.key();
    const known = key === null || this._bundle.seen_keys.includes(key);
    this.node.replaceChildren(renderTimeline(this._bundle, {
      key: known ? key : null,
      onKey: k => this._filter.setKey(k)
    }));
  }

  dispose(): void {
    this._disconnect();
  }
}

