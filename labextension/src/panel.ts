/**
 * The Memory panel in the left sidebar.
 *
 * It shows the memories of the project of the notebook in focus, grouped by
 * type, with a search box, the doctor's warnings, and per-memory open and
 * forget actions. A cheap "stamp" of the memory directory is polled while the
 * panel is visible, so edits made by the kernel, the CLI or another tool show
 * up without a manual refresh.
 */
import { Dialog, MainAreaWidget, showDialog } from '@jupyterlab/apputils';
import type { IDocumentManager } from '@jupyterlab/docmanager';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { DocumentRegistry } from '@jupyterlab/docregistry';
import { deleteIcon, LabIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import {
  IFinding,
  IListReply,
  IMemory,
  MemoryAPI,
  MemoryAPIError
} from './api';
import { ageText, el, groupByType, matchesQuery, typeTitle } from './format';

const MEMORY_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" fill-rule="evenodd"
    d="M6 2h11a2 2 0 0 1 2 2v16a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2V4a2 2 0 0 1 2-2zm0 2v16h11V4h-3v7l-2.5-1.6L9 11V4H6z"/>
</svg>`;

/** The sidebar icon of the panel. */
export const memoryIcon = new LabIcon({
  name: 'jupyter-memory:memory',
  svgstr: MEMORY_SVG
});

/** How often the panel checks whether the memory directory changed (ms). */
export const POLL_INTERVAL = 3000;

export interface IMemoryPanelOptions {
  /** Opens memory files that lie under the server root in the editor. */
  docManager: IDocumentManager | null;
  /** Adds the read-only view of memories outside the server root. */
  addToMainArea: (widget: Widget) => void;
  /** Polling interval in milliseconds (tests may shorten it). */
  pollInterval?: number;
}

/** The sidebar widget listing the memories of the current notebook's project. */
export class MemoryPanel extends Widget {
  constructor(options: IMemoryPanelOptions) {
    super();
    this._options = options;
    this.id = 'jupyter-memory-panel';
    this.addClass('jp-MemoryPanel');
    this.title.icon = memoryIcon;
    this.title.caption = 'Memory';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'Memory');
    this._build();
    this._render();
  }

  /** The notebook path the panel follows ('' means the server root). */
  get notebookPath(): string {
    return this._path;
  }

  /** Follow a notebook: its project decides which memory is shown. */
  setNotebook(panel: NotebookPanel | null): void {
    if (this._context) {
      this._context.pathChanged.disconnect(this._onPathChanged, this);
    }
    this._context = panel ? panel.context : null;
    if (this._context) {
      this._context.pathChanged.connect(this._onPathChanged, this);
    }
    this._setPath(this._context ? this._context.localPath : '');
  }

  /** Reload the list and the doctor's findings now. */
  async refresh(): Promise<void> {
    const path = this._path;
    const token = ++this._generation;
    this._setStatus('Loading…');
    try {
      const reply = await MemoryAPI.list(path);
      if (token !== this._generation) {
        return;
      }
      this._reply = reply;
      this._stamp = reply.stamp;
      this._error = null;
    } catch (error) {
      if (token !== this._generation) {
        return;
      }
      this._reply = null;
      this._stamp = null;
      this._error = describe(error);
      if (error instanceof MemoryAPIError && error.extensionMissing) {
        // Nothing else can be asked either: one message says it all.
        this._findings = [];
        this._render();
        return;
      }
    }
    try {
      const doctor = await MemoryAPI.doctor(path);
      if (token === this._generation) {
        this._findings = doctor.findings ?? [];
      }
    } catch (error) {
      if (token === this._generation) {
        this._findings = [
          { severity: 'error', message: `Checks failed: ${describe(error)}` }
        ];
      }
    }
    if (token === this._generation) {
      this._render();
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
    this._startPolling();
  }

  protected onBeforeHide(msg: Message): void {
    this._stopPolling();
    super.onBeforeHide(msg);
  }

  dispose(): void {
    this._stopPolling();
    if (this._context) {
      this._context.pathChanged.disconnect(this._onPathChanged, this);
    }
    super.dispose();
  }

  private _onPathChanged(_: unknown, path: string): void {
    this._setPath(this._context ? this._context.localPath : path);
  }

  private _setPath(path: string): void {
    if (path === this._path && this._reply) {
      return;
    }
    this._path = path;
    this._reply = null;
    this._findings = [];
    if (this.isVisible) {
      void this.refresh();
    } else {
      this._render();
    }
  }

  /**
   * Poll the stamp while the panel shows: a `Poll` backs off after failures
   * (up to ten intervals) and stands by while the panel or the page is hidden.
   */
  private _startPolling(): void {
    this._stopPolling();
    const interval = this._options.pollInterval ?? POLL_INTERVAL;
    this._poll = new Poll({
      factory: () => this._checkStamp(),
      frequency: { interval, backoff: true, max: 10 * interval },
      standby: () => !this.isVisible || 'when-hidden',
      name: 'jupyter-memory:memory-panel'
    });
  }

  private _stopPolling(): void {
    if (this._poll !== null) {
      this._poll.dispose();
      this._poll = null;
    }
  }

  /**
   * Ask for the stamp; reload only when the memory directory changed. A failed
   * call rejects, so the poll backs off; the next refresh shows the real error.
   */
  private async _checkStamp(): Promise<void> {
    const { stamp } = await MemoryAPI.stamp(this._path);
    if (stamp !== this._stamp) {
      await this.refresh();
    }
  }

  private _build(): void {
    const header = el('div', 'jp-MemoryPanel-header');
    const title = el('h2', 'jp-MemoryPanel-title', 'Memory');
    const refresh = el('button', 'jp-MemoryPanel-iconButton');
    refresh.type = 'button';
    refresh.title = 'Refresh';
    refresh.setAttribute('aria-label', 'Refresh memories');
    refreshIcon.element({ container: refresh, tag: 'span' });
    refresh.addEventListener('click', () => void this.refresh());
    header.append(title, refresh);

    this._where = el('div', 'jp-MemoryPanel-where');

    const searchLabel = el('label', 'jp-MemoryPanel-searchLabel');
    const searchText = el(
      'span',
      'jp-MemoryPanel-visuallyHidden',
      'Search memories'
    );
    this._search = el('input', 'jp-MemoryPanel-search jp-mod-styled');
    this._search.type = 'search';
    this._search.placeholder = 'Search memories';
    this._search.addEventListener('input', () => this._renderList());
    searchLabel.append(searchText, this._search);

    this._statusNode = el('div', 'jp-MemoryPanel-status');
    this._statusNode.setAttribute('role', 'status');
    this._statusNode.setAttribute('aria-live', 'polite');

    this._doctorNode = el('section', 'jp-MemoryPanel-doctor');
    this._doctorNode.setAttribute('aria-label', 'Memory checks');

    this._listNode = el('div', 'jp-MemoryPanel-list');

    this.node.append(
      header,
      this._where,
      searchLabel,
      this._statusNode,
      this._doctorNode,
      this._listNode
    );
  }

  private _setStatus(text: string, isError = false): void {
    this._statusNode.textContent = text;
    this._statusNode.classList.toggle('jp-mod-error', isError);
  }

  private _render(): void {
    const reply = this._reply;
    this._where.textContent = '';
    if (reply) {
      const project = el('div', 'jp-MemoryPanel-project');
      project.textContent = `Project: ${basename(reply.location.project_root)}`;
      project.title = reply.location.project_root;
      const memdir = el('div', 'jp-MemoryPanel-memdir', reply.location.memdir);
      memdir.title = reply.location.memdir;
      this._where.append(project, memdir);
      if (reply.location.enabled === false) {
        const off = el(
          'div',
          'jp-MemoryPanel-off',
          `Auto memory is off: ${reply.location.enabled_reason ?? 'disabled'}`
        );
        this._where.append(off);
      }
    }
    this._renderDoctor();
    this._renderList();
  }

  private _renderDoctor(): void {
    this._doctorNode.textContent = '';
    const findings = this._findings.filter(f => f.message);
    this._doctorNode.hidden = findings.length === 0;
    if (findings.length === 0) {
      return;
    }
    this._doctorNode.append(el('h3', 'jp-MemoryPanel-groupTitle', 'Checks'));
    const list = el('ul', 'jp-MemoryPanel-findings');
    for (const finding of findings) {
      const severity = (finding.severity ?? 'warning').toLowerCase();
      const item = el('li', `jp-MemoryPanel-finding jp-mod-${severity}`);
      item.textContent = finding.message ?? '';
      if (finding.file) {
        item.title = String(finding.file);
      }
      list.append(item);
    }
    this._doctorNode.append(list);
  }

  private _renderList(): void {
    this._listNode.textContent = '';
    if (this._error !== null) {
      this._setStatus(this._error, true);
      return;
    }
    const reply = this._reply;
    if (!reply) {
      return;
    }
    const query = this._search.value;
    const shown = reply.memories.filter(memory => matchesQuery(memory, query));
    const total = reply.memories.length;
    if (total === 0) {
      this._setStatus('No memories yet for this project.');
      return;
    }
    this._setStatus(
      query
        ? `${shown.length} of ${total} memories match.`
        : `${total} ${total === 1 ? 'memory' : 'memories'}.`
    );
    for (const [type, memories] of groupByType(shown)) {
      const section = el('section', 'jp-MemoryPanel-group');
      const heading = el(
        'h3',
        'jp-MemoryPanel-groupTitle',
        `${typeTitle(type)} (${memories.length})`
      );
      const headingId = `jp-MemoryPanel-group-${type}`;
      heading.id = headingId;
      section.setAttribute('aria-labelledby', headingId);
      const list = el('ul', 'jp-MemoryPanel-items');
      for (const memory of memories) {
        list.append(this._renderItem(memory));
      }
      section.append(heading, list);
      this._listNode.append(section);
    }
  }

  private _renderItem(memory: IMemory): HTMLLIElement {
    const label = memory.name || memory.file;
    const item = el('li', 'jp-MemoryPanel-item');
    item.dataset.file = memory.file;

    const open = el('button', 'jp-MemoryPanel-open');
    open.type = 'button';
    open.title = `Open ${memory.file}`;
    open.setAttribute('aria-label', `Open ${label}`);
    const name = el('span', 'jp-MemoryPanel-name', label);
    const age = el('span', 'jp-MemoryPanel-age', ageText(memory.age_days));
    if (memory.mtime) {
      age.title = memory.mtime;
    }
    open.append(name);
    if (memory.scope === 'team') {
      // Shared with the whole team through the team folder (SPEC §8).
      const scope = el('span', 'jp-MemoryPanel-scope', 'team');
      scope.title =
        'Team memory: shared with everyone who syncs the team folder';
      open.append(scope);
    }
    open.append(age);
    open.addEventListener('click', () => void this._open(memory));

    const forget = el(
      'button',
      'jp-MemoryPanel-iconButton jp-MemoryPanel-forget'
    );
    forget.type = 'button';
    forget.title = `Forget ${label}`;
    forget.setAttribute('aria-label', `Forget ${label}`);
    deleteIcon.element({ container: forget, tag: 'span' });
    forget.addEventListener('click', () => void this._forget(memory));

    const row = el('div', 'jp-MemoryPanel-row');
    row.append(open, forget);
    item.append(row);
    if (memory.description) {
      item.append(el('p', 'jp-MemoryPanel-description', memory.description));
    }
    if (memory.indexed === false) {
      item.append(
        el(
          'p',
          'jp-MemoryPanel-note',
          'Not in MEMORY.md: index-mode recall never sees it.'
        )
      );
    }
    return item;
  }

  /** Open in the editor when the file is reachable from the server root, else read-only. */
  private async _open(memory: IMemory): Promise<void> {
    const reply = this._reply;
    const docManager = this._options.docManager;
    const base = reply?.location.server_path;
    if (docManager && base !== null && base !== undefined) {
      const path = base ? `${base}/${memory.file}` : memory.file;
      docManager.openOrReveal(path);
      return;
    }
    try {
      const read = await MemoryAPI.read(this._path, memory.file);
      const memdir = reply?.location.memdir ?? '';
      const where = memdir ? `${memdir}/${memory.file}` : memory.file;
      const id = `jupyter-memory-view-${hashId(where)}`;
      let view = this._views.get(id);
      if (!view || view.isDisposed) {
        view = new MainAreaWidget({ content: new MemoryView() });
        view.id = id;
        view.title.icon = memoryIcon;
        view.title.closable = true;
        this._views.set(id, view);
      }
      view.content.setMemory(read, read.text, where);
      view.title.label = read.name || memory.file;
      view.title.caption = `${where} (read-only)`;
      if (!view.isAttached) {
        this._options.addToMainArea(view);
      }
      view.activate();
    } catch (error) {
      this._setStatus(describe(error), true);
    }
  }

  private async _forget(memory: IMemory): Promise<void> {
    const label = memory.name || memory.file;
    const body = el('div', 'jp-MemoryPanel-confirm');
    body.append(
      el('p', '', `Forget “${label}”?`),
      el(
        'p',
        '',
        `The file ${memory.file} is removed from the memory directory and its line from MEMORY.md.`
      )
    );
    const result = await showDialog({
      title: 'Forget memory',
      body: new Widget({ node: body }),
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Forget' })]
    });
    if (!result.button.accept) {
      return;
    }
    try {
      await MemoryAPI.forget(this._path, memory.file);
      this._setStatus(`Forgot ${label}.`);
    } catch (error) {
      this._setStatus(describe(error), true);
      return;
    }
    await this.refresh();
  }

  private _options: IMemoryPanelOptions;
  private _path = '';
  private _context: DocumentRegistry.IContext<DocumentRegistry.IModel> | null =
    null;
  private _reply: IListReply | null = null;
  private _findings: IFinding[] = [];
  private _error: string | null = null;
  private _stamp: string | null = null;
  private _generation = 0;
  private _poll: Poll | null = null;
  private _views = new Map<string, MainAreaWidget<MemoryView>>();
  private _where!: HTMLDivElement;
  private _search!: HTMLInputElement;
  private _statusNode!: HTMLDivElement;
  private _doctorNode!: HTMLElement;
  private _listNode!: HTMLDivElement;
}

/** A read-only view of a memory file that lies outside the server root. */
export class MemoryView extends Widget {
  constructor() {
    super();
    this.addClass('jp-MemoryView');
  }

  setMemory(memory: IMemory, text: string, where: string): void {
    this.node.textContent = '';
    const header = el('header', 'jp-MemoryView-header');
    header.append(
      el('h2', 'jp-MemoryView-title', memory.name || memory.file),
      el(
        'p',
        'jp-MemoryView-where',
        `${where} — read-only (outside the server root)`
      )
    );
    if (memory.description) {
      header.append(el('p', 'jp-MemoryView-description', memory.description));
    }
    const pre = el('pre', 'jp-MemoryView-text', text);
    pre.tabIndex = 0;
    pre.setAttribute('aria-label', `Text of ${memory.file}`);
    this.node.append(header, pre);
  }
}

/**
 * One line for people. A `MemoryAPIError` is already that (api.ts never puts a
 * reply's body in it); anything else is cut short, as its text is unknown.
 */
function describe(error: unknown): string {
  if (error instanceof MemoryAPIError) {
    return error.message;
  }
  const text = error instanceof Error ? error.message : String(error);
  const line = text.split(/\s+/).join(' ');
  return line.length > 300 ? line.slice(0, 299) + '…' : line;
}

function basename(path: string): string {
  const parts = path.split(/[\\/]/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : path;
}

/** A short stable id for a path (djb2), usable in DOM ids. */
function hashId(text: string): string {
  let hash = 5381;
  for (let i = 0; i < text.length; i++) {
    hash = ((hash << 5) + hash + text.charCodeAt(i)) | 0;
  }
  return (hash >>> 0).toString(36);
}
