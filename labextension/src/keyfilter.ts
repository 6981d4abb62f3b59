/**
 * The key the notebook's timelines are filtered to, shared by the sidebar and the
 * static timelines: one value per notebook session, changed by a click in the
 * sidebar or a pick in a timeline's own key box.
 */

import { ISignal, Signal } from '@lumino/signaling';

export class KeyFilter {
  private _keys = new Map<string, string | null>();
  private _changed = new Signal<this, { session: string; key: string | null }>(this);

  /** Fired with the session whose filter changed. */
  get changed(): ISignal<this, { session: string; key: string | null }> {
    return this._changed;
  }

  get(session: string): string | null {
    return this._keys.get(session) ?? null;
  }

  set(session: string, key: string | null): void {
    if (this.get(session) === key) {
      return;
    }
    this._keys.set(session, key);
    this._changed.emit({ session, key });
  }
}
