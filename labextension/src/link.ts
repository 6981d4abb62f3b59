/**
 * One notebook's line to the jupyter_refs feed in its kernel.
 *
 * The kernel end (``jupyter_refs/views/lab.py``) only registers the comm target
 * ``jupyter-refs``; it never opens a comm itself, so a front end without this
 * extension (nbclassic, VS Code, plain JupyterLab) logs no "No handler found for
 * comm target".  We open the comm: whenever a kernel appears or comes back from
 * a restart, and again once a cell that mentions ``jupyter_refs`` (``%load_ext
 * jupyter_refs``) has run while the extension was not loaded.  If it is not
 * loaded there, the kernel closes that comm at once and we say so.
 */

import { ISessionContext } from '@jupyterlab/apputils';
import { ICodeCellModel } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONObject, PartialJSONObject } from '@lumino/coreutils';
import { ISignal, Signal } from '@lumino/signaling';

import { TRACE_MIME } from './bundle';

export const COMM_TARGET = 'jupyter-refs';
/** The static picture next to each timeline (``jupyter_refs/views/svg.py``). */
export const SVG_MIME = 'image/svg+xml';

export interface IRefsRow {
  key: string;
  clients: Record<string, [number, string]>;
  scheduler: string;
  who_wants: string[];
  on_workers: string[];
  violations: string[];
}

export interface IViolation {
  name: string;
  key: string;
  client: string | null;
  first_seq: number;
  seq: number;
  explanation: string;
}

export interface IRefs {
  cluster: {
    title: string;
    events: number;
    dropped: number;
    violations: number;
    /** What the trace follows (``focus.changed``), or null for every key. */
    focus?: string | null;
    /** Workers the scheduler removed (``worker.removed``) -> why. */
    gone?: Record<string, string>;
  } | null;
  rows: IRefsRow[];
  more: number;
  violations: IViolation[];
  /** A request the kernel could not carry out (a focus), in its words. */
  error?: string;
  /** With no cluster: how the last one ended ("the cluster (…) was closed"), or null. */
  ended?: string | null;
}

/** What the sidebar can say about a notebook's kernel. */
export type LinkStatus = 'no-kernel' | 'probing' | 'not-loaded' | 'loaded';

export class KernelLink {
  status: LinkStatus = 'no-kernel';
  refs: IRefs | null = null;
  private _comm: Kernel.IComm | null = null;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _changed = new Signal<this, void>(this);
  private _disposed = false;
  private _restarted = false;
  /** A cell that may load the extension ran: probe again when the kernel is idle. */
  private _mayLoad = false;

  constructor(private _panel: NotebookPanel) {
    const session = _panel.sessionContext;
    session.kernelChanged.connect(this._onKernelChanged, this);
    session.statusChanged.connect(this._onStatus, this);
    void session.ready.then(() => this._attach(session));
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get panel(): NotebookPanel {
    return this._panel;
  }

  /** Ask the kernel to show only `key` in its live timelines (null: every key). */
  filter(key: string | null): void {
    this._send({ type: 'filter', key });
  }

  /**
   * Ask the kernel to trace only `key` from now on, on every source of its cluster
   * (null: every key again).  Unlike `filter`, what is left out is never recorded.
   */
  focus(key: string | null): void {
    this._send({ type: 'focus', key });
  }

  refresh(): void {
    if (!this._send({ type: 'refresh' })) {
      this._probe();
    }
  }

  dispose(): void {
    if (this._disposed) return;
    this._disposed = true;
    const session = this._panel.sessionContext;
    session.kernelChanged.disconnect(this._onKernelChanged, this);
    session.statusChanged.disconnect(this._onStatus, this);
    this._closeComm();
    this._unwatch();
    Signal.clearData(this);
  }

  private _send(data: JSONObject): boolean {
    if (this._comm === null || this._comm.isDisposed) {
      return false;
    }
    this._comm.send(data);
    return true;
  }

  private _set(status: LinkStatus, refs: IRefs | null = this.refs): void {
    this.status = status;
    this.refs = refs;
    this._changed.emit();
  }

  private _onKernelChanged(): void {
    this._closeComm();
    this._unwatch();
    this._attach(this._panel.sessionContext);
  }

  private _onStatus(_: ISessionContext, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      // The kernel's feed died with it; whatever was shown is no longer true.
      this._closeComm();
      this._restarted = status !== 'dead';
      this._set(status === 'dead' ? 'no-kernel' : 'probing', null);
    } else if (status === 'idle' && this._restarted) {
      this._restarted = false;
      this._mayLoad = false;
      this._probe(); // back from a restart: the extension may be loaded at startup
    } else if (status === 'idle' && this._mayLoad) {
      this._mayLoad = false;
      if (this.status === 'not-loaded') {
        this._probe(); // the cell that just ran may have loaded it
      }
    }
  }

  /** Note a cell that may load the extension (its source names jupyter_refs). */
  private _onIOPub(_: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    if (KernelMessage.isExecuteInputMsg(msg) && msg.content.code.includes('jupyter_refs')) {
      this._mayLoad = true;
    }
  }

  private _unwatch(): void {
    if (this._kernel !== null) {
      this._kernel.iopubMessage.disconnect(this._onIOPub, this);
    }
  }

  private _attach(session: ISessionContext): void {
    const kernel = session.session?.kernel ?? null;
    this._kernel = kernel;
    if (kernel === null) {
      this._set('no-kernel', null);
      return;
    }
    kernel.iopubMessage.connect(this._onIOPub, this);
    this._probe();
  }

  private _probe(): void {
    const kernel = this._kernel;
    if (kernel === null || kernel.isDisposed || this._disposed) {
      return;
    }
    this._set('probing', null);
    const comm = kernel.createComm(COMM_TARGET);
    this._wire(comm);
    comm.open({ type: 'hello' });
  }

  private _wire(comm: Kernel.IComm): void {
    comm.onMsg = msg => this._onMsg(comm, msg);
    comm.onClose = () => {
      if (this._comm === comm || this._comm === null) {
        this._comm = null;
        if (!this._disposed && this.status !== 'no-kernel') {
          this._set('not-loaded', null);
        }
      }
    };
  }

  private _onMsg(comm: Kernel.IComm, msg: KernelMessage.ICommMsgMsg): void {
    const data = msg.content.data;
    if (this._comm !== comm) {
      // The first comm to speak is the one we keep; a second one is closed.
      if (this._comm !== null && !this._comm.isDisposed) {
        comm.close();
        return;
      }
      this._comm = comm;
    }
    if (data.type === 'refs') {
      this._set('loaded', data as unknown as IRefs);
    } else if (data.type === 'trace') {
      this._saveTrace(String(data.timeline_id), data.bundle as PartialJSONObject,
        typeof data.svg === 'string' ? data.svg : null);
    }
  }

  /**
   * Keep the saved copy in a timeline's outputs as current as its live figure: the bundle,
   * and the static SVG picture that viewers without this extension show.
   */
  private _saveTrace(timelineId: string, bundle: PartialJSONObject, svg: string | null): void {
    const cells = this._panel.content.model?.cells;
    if (!cells) return;
    for (let c = 0; c < cells.length; c++) {
      const cell = cells.get(c);
      if (cell.type !== 'code') continue;
      const outputs = (cell as ICodeCellModel).outputs;
      for (let i = 0; i < outputs.length; i++) {
        const output = outputs.get(i);
        const saved = output.data[TRACE_MIME] as PartialJSONObject | undefined;
        if (saved?.timeline_id === timelineId) {
          const data: PartialJSONObject = { ...output.data, [TRACE_MIME]: bundle };
          if (svg !== null) {
            data[SVG_MIME] = svg;
          }
          output.setData({ data });
        }
      }
    }
  }

  private _closeComm(): void {
    const comm = this._comm;
    this._comm = null;
    if (comm !== null && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is already gone
      }
    }
  }
}
