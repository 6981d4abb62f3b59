/**
 * jupyter_refs in JupyterLab: a refs sidebar that follows the kernel's cluster, and
 * timeline outputs that still show their trace when no kernel holds the widget.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookModel, INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { LabIcon } from '@jupyterlab/ui-components';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { KeyFilter } from './keyfilter';
import { KernelLink } from './link';
import { IFilterSource, traceFactory } from './output';
import { RefsSidebar } from './sidebar';

export { renderTimeline } from './timeline';
export { checkBundle, TRACE_MIME } from './bundle';

const ICON = new LabIcon({
  name: 'jupyter-refs:icon',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<circle cx="6" cy="6" r="3"/><circle cx="18" cy="6" r="3"/><circle cx="12" cy="18" r="3"/>' +
    '<path d="M7.5 8.2l3.2 7.2 1.8-.8-3.2-7.2zM16.5 8.2l-3.2 7.2-1.8-.8 3.2-7.2z"/></g></svg>'
});

/** Rank of our renderer: ahead of the widget renderer (-10), which it wraps. */
const RANK = -20;

function filterSource(filters: KeyFilter, panel: NotebookPanel, links: Map<NotebookPanel, KernelLink>): IFilterSource {
  return {
    key: () => filters.get(panel.id),
    setKey: key => {
      filters.set(panel.id, key);
      links.get(panel)?.filter(key);
    },
    onChange: callback => {
      const slot = (_: KeyFilter, change: { session: string }) => {
        if (change.session === panel.id) callback();
      };
      filters.changed.connect(slot);
      return () => filters.changed.disconnect(slot);
    }
  };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-refs:plugin',
  description: 'Refs sidebar and saved-trace timelines for jupyter_refs',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, rendermime: IRenderMimeRegistry) => {
    const filters = new KeyFilter();
    const links = new Map<NotebookPanel, KernelLink>();
    const sidebar = new RefsSidebar(filters);
    sidebar.title.icon = ICON;
    app.shell.add(sidebar, 'right', { rank: 900 });

    // Outside notebooks (consoles, output views): a saved trace with no key filter.
    rendermime.addFactory(
      traceFactory(rendermime, { key: () => null, setKey: () => undefined, onChange: () => () => undefined }),
      RANK
    );

    // Each notebook: its own renderer (over its own widget renderer) and its kernel link.
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: (panel: NotebookPanel, _context: DocumentRegistry.IContext<INotebookModel>): IDisposable => {
        const ownRendermime = panel.content.rendermime;
        ownRendermime.addFactory(traceFactory(ownRendermime, filterSource(filters, panel, links)), RANK);
        const link = new KernelLink(panel);
        links.set(panel, link);
        const forget = () => {
          links.delete(panel);
          if (sidebar.link === link) sidebar.follow(null);
          link.dispose();
        };
        panel.disposed.connect(forget);
        if (tracker.currentWidget === panel) sidebar.follow(link);
        return new DisposableDelegate(forget);
      }
    });

    tracker.currentChanged.connect((_, panel) => {
      sidebar.follow(panel ? links.get(panel) ?? null : null);
    });

    app.commands.addCommand('jupyter-refs:show-sidebar', {
      label: 'Show the jupyter_refs references sidebar',
      execute: () => app.shell.activateById(sidebar.id)
    });
  }
};

export default plugin;
