/**
 * Timeline outputs: the live widget while its kernel holds it, the saved trace otherwise.
 *
 * A timeline output carries two MIME types: the ipywidgets view and the saved
 * trace.  This renderer ranks above the widget renderer, and *is* a widget
 * renderer: it asks the notebook's own rendermime for one (so ipywidgets gives it
 * its manager and re-renders it as usual) and only adds a fallback.  While the
 * widget view is not there — no kernel, a restarted kernel, a model that is gone
 * — the saved trace is drawn in its place, from the bundle alone.  An output
 * with only the saved trace is drawn as a static timeline.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { TRACE_MIME, WIDGET_MIME } from './bundle';
import { IFilterSource, StaticTimeline } from './static';

export type { IFilterSource };
export { StaticTimeline };

/** Only the saved trace (an output with no widget view). */
export class TraceRenderer extends Widget implements IRenderMime.IRenderer {
  private _view: StaticTimeline;

  constructor(filter: IFilterSource) {
    super();
    this.addClass('jp-RefsTraceOutput');
    this._view = new StaticTimeline(filter);
    this.node.appendChild(this._view.node);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._view.bundle = model.data[TRACE_MIME];
  }

  dispose(): void {
    this._view.dispose();
    super.dispose();
  }
}

/**
 * Give a widget renderer a fallback: the static view sits in its node whenever it
 * shows no widget view ("Loading widget...", "model not found", a closed view).
 */
export function withFallback(renderer: IRenderMime.IRenderer, filter: IFilterSource): IRenderMime.IRenderer {
  const fallback = new StaticTimeline(filter);
  fallback.node.classList.add('jp-RefsFallback');
  const node = renderer.node;
  const hasView = () => Array.from(node.children).some(c => c !== fallback.node);
  const update = () => {
    const live = hasView() && !renderer.isHidden;
    node.classList.toggle('jp-RefsFallback-shown', !live);
    if (live && fallback.node.parentNode === node) {
      node.removeChild(fallback.node);
    } else if (!live && fallback.node.parentNode !== node) {
      node.appendChild(fallback.node);
    }
  };
  const observer = new MutationObserver(update);
  observer.observe(node, { childList: true });

  const render = renderer.renderModel.bind(renderer);
  let modelId: unknown = undefined;
  renderer.renderModel = async (model: IRenderMime.IMimeModel) => {
    fallback.bundle = model.data[TRACE_MIME];
    const widget = model.data[WIDGET_MIME] as { model_id?: string } | undefined;
    if (widget === undefined || !model.trusted) {
      // A saved trace alone, or an untrusted output (the widget factory is not safe;
      // the static view is: it only ever sets text): the fallback is all there is.
      update();
      return;
    }
    // A refreshed saved trace on a live view: keep the view, do not rebuild it.
    if (widget.model_id === modelId && hasView()) {
      return;
    }
    modelId = widget.model_id;
    update();
    await render(model);
    update();
  };
  // A hidden renderer (its view was closed) shows the saved trace instead.
  const show = renderer.show.bind(renderer);
  const hide = renderer.hide.bind(renderer);
  renderer.hide = () => {
    hide();
    renderer.node.classList.remove('lm-mod-hidden');
    renderer.node.style.display = '';
    update();
  };
  renderer.show = () => {
    show();
    update();
  };
  renderer.disposed.connect(() => {
    observer.disconnect();
    fallback.dispose();
  });
  return renderer;
}

/**
 * The factory for one rendermime (a notebook's own, or the application's).
 *
 * The renderer it makes for a notebook *is* the notebook's widget renderer (so
 * ipywidgets finds it, gives it its manager and re-renders it as for any widget
 * output), given a fallback; with no widget renderer around, a plain static one.
 */
export function traceFactory(rendermime: IRenderMimeRegistry, filter: IFilterSource): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [TRACE_MIME],
    createRenderer: () =>
      rendermime.mimeTypes.includes(WIDGET_MIME)
        ? withFallback(rendermime.createRenderer(WIDGET_MIME), filter)
        : new TraceRenderer(filter)
  };
}
