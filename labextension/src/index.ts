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
import { TURN_MIME } from './turn';
import { INotebookTurns, sameTurn, setTurnSource } from './turnsource';
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

/** The outputs a cell model holds, as far as the turn source reads them. */
interface IOutputs {
  length: number;
  get(index: number): { data: Record<string, unknown> };
}

/** Every turn record in `panel`'s notebook, in cell order. */
function turnRecords(panel: NotebookPanel): Record<string, unknown>[] {
  const records: Record<string, unknown>[] = [];
  const cells = panel.content.model?.cells;
  if (!cells) {
    return records;
  }
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    const outputs = (cell as unknown as { outputs?: IOutputs }).outputs;
    if (cell.type !== 'code' || !outputs) {
      continue;
    }
    for (let j = 0; j < outputs.length; j++) {
      const data = outputs.get(j).data[TURN_MIME];
      if (data && typeof data === 'object' && !Array.isArray(data)) {
        records.push(data as Record<string, unknown>);
      }
    }
  }
  return records;
}

const turnSourcePlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-memory:turn-source',
  description:
    'Lets the turn renderer read the other turn outputs of its notebook ' +
    '(the parts a later turn refers to) and name the notebook in commands.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    setTurnSource(record => {
      let found: INotebookTurns | null = null;
      tracker.forEach(panel => {
        if (found) {
          return;
        }
        const records = turnRecords(panel);
        if (records.some(other => sameTurn(other, record))) {
          found = { path: panel.context.path, records };
        }
      });
      return found;
    });
  }
};

export default [panelPlugin, kernelPathPlugin, turnSourcePlugin, viewPlugin];
