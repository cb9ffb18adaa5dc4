/**
 * jupyter-memory's JupyterLab plugins: the Memory panel and the notebook path
 * sync for kernels, and the static fallback of widget outputs (widgetview.ts).
 * The turn renderer is a separate `mimeExtension` (mime.ts).
 */
import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { KernelPathSync } from './kernelpath';
import { MemoryPanel } from './panel';
import { viewPlugin } from './widgetview';

const OPEN_PANEL = 'jupyter-memory:open-panel';

const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-memory:panel',
  description: 'A sidebar panel with the memories of the notebook in focus.',
  autoStart: true,
  optional: [
    INotebookTracker,
    IDocumentManager,
    ILayoutRestorer,
    ICommandPalette,
    ILabShell
  ],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker | null,
    docManager: IDocumentManager | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    labShell: ILabShell | null
  ) => {
    const panel = new MemoryPanel({
      docManager,
      addToMainArea: widget => app.shell.add(widget, 'main')
    });
    app.shell.add(panel, 'left', { rank: 650 });
    if (restorer) {
      restorer.add(panel, 'jupyter-memory-panel');
    }
    if (tracker) {
      panel.setNotebook(tracker.currentWidget);
      // The tracker keeps its last notebook while focus is elsewhere, and
      // reports null only when no notebook is left: then the server root's
      // project is shown.
      tracker.currentChanged.connect((_, notebook) =>
        panel.setNotebook(notebook)
      );
    }
    app.commands.addCommand(OPEN_PANEL, {
      label: 'Show Memory Panel',
      caption: 'Show the memories of the notebook in focus',
      execute: () => {
        if (labShell) {
          labShell.activateById(panel.id);
        } else {
          app.shell.activateById(panel.id);
        }
      }
    });
    if (palette) {
      palette.addItem({ command: OPEN_PANEL, category: 'Memory' });
    }
  }
};

const kernelPathPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-memory:kernel-path',
  description: "Tells each notebook's Python kernel the notebook's path.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const attach = (panel: NotebookPanel) => new KernelPathSync(panel);
    tracker.forEach(attach);
    tracker.widgetAdded.connect((_, panel) => attach(panel));
  }
};

export default [panelPlugin, kernelPathPlugin, viewPlugin];
