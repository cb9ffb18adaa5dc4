/**
 * Tell a notebook's Python kernel which notebook it serves.
 *
 * The kernel cannot know that its notebook was renamed or moved, and the
 * `JPY_SESSION_NAME` variable it was started with goes stale when that
 * happens. So whenever a Python kernel of a notebook becomes ready (first
 * start, restart, kernel change) and whenever the notebook's path changes, we
 * run a silent execute that calls `jupyter_memory.notebook_path.
 * set_notebook_path`. The call is wrapped in try/except so a kernel without
 * the package sees nothing, and it stores no history and bumps no counter.
 */
import { PageConfig } from '@jupyterlab/coreutils';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';

/** The Python source run in the kernel for a notebook at `path`. */
export function setPathCode(path: string): string {
  // A JSON string literal is also a valid Python string literal.
  const literal = JSON.stringify(path);
  return [
    'try:',
    '    __import__("jupyter_memory.notebook_path", fromlist=["set_notebook_path"])' +
      `.set_notebook_path(${literal})`,
    'except Exception:',
    '    pass'
  ].join('\n');
}

/** The notebook's filesystem path: the server root joined with its local path. */
export function absoluteNotebookPath(
  localPath: string,
  serverRoot: string
): string {
  const root = serverRoot.replace(/[\\/]+$/, '');
  if (!root) {
    return localPath;
  }
  return localPath ? `${root}/${localPath}` : root;
}

const RESTARTING = new Set([
  'restarting',
  'autorestarting',
  'starting',
  'dead'
]);

/** Keeps one notebook's kernel informed of the notebook's path. */
export class KernelPathSync {
  constructor(panel: NotebookPanel) {
    this._panel = panel;
    const session = panel.sessionContext;
    session.kernelChanged.connect(this._onKernelChanged, this);
    session.statusChanged.connect(this._onStatusChanged, this);
    panel.context.pathChanged.connect(this._onPathChanged, this);
    panel.disposed.connect(this._dispose, this);
    void session.ready.then(() => this._send());
  }

  private _onKernelChanged(): void {
    this._pending = true;
    void this._send();
  }

  private _onStatusChanged(_: unknown, status: Kernel.Status): void {
    if (RESTARTING.has(status)) {
      this._pending = true;
    } else if (status === 'idle' && this._pending) {
      void this._send();
    }
  }

  private _onPathChanged(): void {
    this._pending = true;
    void this._send();
  }

  private async _send(): Promise<void> {
    const kernel = this._panel.sessionContext.session?.kernel;
    if (!kernel || kernel.isDisposed || this._sending) {
      return;
    }
    this._sending = true;
    let failed = false;
    try {
      const info = await kernel.info;
      if (info.language_info?.name !== 'python') {
        this._pending = false;
        return;
      }
      const path = absoluteNotebookPath(
        this._panel.context.localPath,
        PageConfig.getOption('serverRoot')
      );
      this._pending = false;
      const future = kernel.requestExecute(
        {
          code: setPathCode(path),
          silent: true,
          store_history: false,
          allow_stdin: false,
          stop_on_error: false
        },
        true
      );
      await future.done;
    } catch {
      // A kernel that died or refused the request gets the path on its next start.
      this._pending = true;
      failed = true;
    } finally {
      this._sending = false;
    }
    if (this._pending && !failed) {
      // The path changed while the previous call was in flight.
      void this._send();
    }
  }

  private _dispose(): void {
    const session = this._panel.sessionContext;
    session.kernelChanged.disconnect(this._onKernelChanged, this);
    session.statusChanged.disconnect(this._onStatusChanged, this);
    this._panel.context.pathChanged.disconnect(this._onPathChanged, this);
  }

  private _panel: NotebookPanel;
  private _pending = true;
  private _sending = false;
}
