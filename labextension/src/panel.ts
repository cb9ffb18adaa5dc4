/**
 * The Memory panel in the left sidebar.
 *
 * It shows the memories of the project of the notebook in focus, grouped by
 * type, with a search box, the doctor's warnings, and per-memory open and
 * forget actions. A cheap "stamp" of the memory directory is polled while the
 * panel is visible, so edits made by the kernel, the CLI or another tool show
 * up without a manual refresh.
 *
 * At hundreds of memories the search box and the count stay on top while the
 * list scrolls, and the list is one tab stop: a layout grid (the ARIA
 * authoring practices' pattern for a list whose items carry actions) with a
 * roving tabindex, one row per memory, its open and forget buttons the cells.
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
import {
  ageText,
  el,
  groupByType,
  matchesQuery,
  nameCuts,
  typeTitle
} from './format';

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

/** How many rows PageUp and PageDown move in the list. */
const PAGE_ROWS = 10;

/** The cells of a memory row, in order: open, forget. */
const CELL_CLASSES = ['jp-MemoryPanel-open', 'jp-MemoryPanel-forget'];

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
      this._staleSince = null;
    } catch (error) {
      if (token !== this._generation) {
        return;
      }
      // The last list of this notebook stays, marked stale, while the poll retries.
      this._markStale(error);
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
    this._error = null;
    this._staleSince = null;
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
    let stamp: string;
    try {
      ({ stamp } = await MemoryAPI.stamp(this._path));
    } catch (error) {
      this._markStale(error);
      this._render();
      throw error;
    }
    if (stamp !== this._stamp || this._error !== null) {
      await this.refresh();
    }
  }

  /** Keep the list shown, marked stale since the first failure, and say why. */
  private _markStale(error: unknown): void {
    this._error = describe(error);
    if (this._reply && this._staleSince === null) {
      this._staleSince = new Date();
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

    // ArrowDown in the search box goes on to the list, as in a combobox.
    this._search.addEventListener('keydown', event => {
      if (event.key === 'ArrowDown' && this._rows().length > 0) {
        event.preventDefault();
        this._focusCell(this._activeRow() ?? this._rows()[0], this._activeCol);
      }
    });

    this._statusNode = el('div', 'jp-MemoryPanel-status');
    this._statusNode.id = 'jp-MemoryPanel-status';
    this._statusNode.setAttribute('role', 'status');
    this._statusNode.setAttribute('aria-live', 'polite');

    // The search box and the count stay on top while the list scrolls under them.
    this._stickyNode = el('div', 'jp-MemoryPanel-sticky');
    this._stickyNode.append(searchLabel, this._statusNode);

    this._doctorNode = el('section', 'jp-MemoryPanel-doctor');
    this._doctorNode.setAttribute('aria-label', 'Memory checks');

    this._listNode = el('div', 'jp-MemoryPanel-list');
    this._listNode.setAttribute('role', 'grid');
    this._listNode.setAttribute('aria-label', 'Memories');
    this._listNode.setAttribute('aria-describedby', this._statusNode.id);
    this._listNode.addEventListener('keydown', event => this._onListKey(event));
    this._listNode.addEventListener('focusin', event =>
      this._onListFocus(event)
    );

    this.node.append(
      header,
      this._where,
      this._stickyNode,
      this._doctorNode,
      this._listNode
    );
  }

  /** The memory rows shown, in order. */
  private _rows(): HTMLElement[] {
    return Array.from(
      this._listNode.querySelectorAll<HTMLElement>('.jp-MemoryPanel-item')
    );
  }

  /** The row holding the list's one tab stop, if it is still shown. */
  private _activeRow(): HTMLElement | null {
    return (
      this._rows().find(row => row.dataset.file === this._activeFile) ?? null
    );
  }

  private _cell(row: HTMLElement, col: number): HTMLButtonElement {
    return row.querySelector<HTMLButtonElement>(`.${CELL_CLASSES[col]}`)!;
  }

  /** Give one cell the list's tab stop (roving tabindex), without moving focus. */
  private _setActive(row: HTMLElement, col: number): HTMLButtonElement {
    for (const node of this._listNode.querySelectorAll<HTMLElement>(
      '[tabindex="0"]'
    )) {
      node.tabIndex = -1;
    }
    const cell = this._cell(row, col);
    cell.tabIndex = 0;
    this._activeFile = row.dataset.file ?? null;
    this._activeCol = col;
    return cell;
  }

  /** Move the focus to a cell and scroll its row out from under the search box. */
  private _focusCell(row: HTMLElement, col: number): void {
    const cell = this._setActive(row, col);
    cell.focus({ preventScroll: true });
    const top = this._stickyNode.getBoundingClientRect().bottom;
    const bottom = this.node.getBoundingClientRect().bottom;
    const box = row.getBoundingClientRect();
    if (box.top < top) {
      this.node.scrollTop -= top - box.top;
    } else if (box.bottom > bottom) {
      this.node.scrollTop += box.bottom - bottom;
    }
  }

  /** A click or a Tab into the list makes the focused cell the tab stop. */
  private _onListFocus(event: FocusEvent): void {
    const target = event.target as HTMLElement;
    const row = target.closest<HTMLElement>('.jp-MemoryPanel-item');
    const col = CELL_CLASSES.findIndex(name => target.classList.contains(name));
    if (row && col >= 0) {
      this._setActive(row, col);
    }
  }

  /**
   * The grid's keys: arrows, Home/End and PageUp/PageDown move, Delete asks to
   * forget; Enter and Space are the focused button's own.
   */
  private _onListKey(event: KeyboardEvent): void {
    const rows = this._rows();
    const row = (event.target as HTMLElement).closest<HTMLElement>(
      '.jp-MemoryPanel-item'
    );
    if (!row || event.altKey || event.metaKey) {
      return;
    }
    const index = rows.indexOf(row);
    const last = rows.length - 1;
    const col = this._activeCol;
    let next: number | null = null;
    let nextCol = col;
    switch (event.key) {
      case 'ArrowDown':
        next = Math.min(index + 1, last);
        break;
      case 'ArrowUp':
        next = Math.max(index - 1, 0);
        break;
      case 'PageDown':
        next = Math.min(index + PAGE_ROWS, last);
        break;
      case 'PageUp':
        next = Math.max(index - PAGE_ROWS, 0);
        break;
      case 'Home':
        next = 0;
        break;
      case 'End':
        next = last;
        break;
      case 'ArrowRight':
        next = index;
        nextCol = Math.min(col + 1, CELL_CLASSES.length - 1);
        break;
      case 'ArrowLeft':
        next = index;
        nextCol = Math.max(col - 1, 0);
        break;
      case 'Delete': {
        const memory = this._shown.get(row.dataset.file ?? '');
        if (memory) {
          event.preventDefault();
          void this._forget(memory);
        }
        return;
      }
      default:
        return;
    }
    event.preventDefault();
    this._focusCell(rows[next], nextCol);
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
    // A re-render (a poll, a search) keeps the focus on the same memory.
    const hadFocus =
      this._focusAfterRender || this._listNode.contains(document.activeElement);
    this._focusAfterRender = false;
    this._listNode.textContent = '';
    this._shown.clear();
    const reply = this._reply;
    this._listNode.classList.toggle(
      'jp-mod-stale',
      this._error !== null && reply !== null
    );
    if (this._error !== null && (!reply || this._staleSince === null)) {
      this._setStatus(
        `Could not load the memories: ${this._error}. Retrying, backing off.`,
        true
      );
      return;
    }
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
    if (this._error !== null && this._staleSince !== null) {
      this._setStatus(
        staleText(this._error, this._staleSince, this._options.pollInterval),
        true
      );
    } else {
      this._setStatus(
        query
          ? `${shown.length} of ${total} memories match.`
          : `${total} ${total === 1 ? 'memory' : 'memories'}.`
      );
    }
    if (this._cuts === null || this._cutsFor !== reply) {
      this._cuts = nameCuts(reply.memories.map(m => m.name || m.file));
      this._cutsFor = reply;
    }
    for (const [type, memories] of groupByType(shown)) {
      // A group is a rowgroup whose first row is its heading (not focusable).
      const group = el('div', 'jp-MemoryPanel-group');
      group.setAttribute('role', 'rowgroup');
      const headingRow = el('div', 'jp-MemoryPanel-groupRow');
      headingRow.setAttribute('role', 'row');
      const headingCell = el('div', 'jp-MemoryPanel-groupCell');
      headingCell.setAttribute('role', 'gridcell');
      headingCell.setAttribute('aria-colspan', '2');
      headingCell.append(
        el(
          'h3',
          'jp-MemoryPanel-groupTitle',
          `${typeTitle(type)} (${memories.length})`
        )
      );
      headingRow.append(headingCell);
      group.append(headingRow);
      for (const memory of memories) {
        this._shown.set(memory.file, memory);
        group.append(this._renderItem(memory));
      }
      this._listNode.append(group);
    }
    const rows = this._rows();
    if (rows.length > 0) {
      const row = this._activeRow() ?? rows[0];
      if (hadFocus) {
        this._focusCell(row, this._activeCol);
      } else {
        this._setActive(row, this._activeCol);
      }
    }
  }

  private _renderItem(memory: IMemory): HTMLElement {
    const label = memory.name || memory.file;
    const item = el('div', 'jp-MemoryPanel-item');
    item.setAttribute('role', 'row');
    item.dataset.file = memory.file;
    const id = `jp-MemoryPanel-${hashId(memory.file)}`;

    const open = el('button', 'jp-MemoryPanel-open');
    open.type = 'button';
    open.tabIndex = -1;
    // The whole name on hover, and to assistive technology, however it is cut.
    open.title = label === memory.file ? label : `${label}\n${memory.file}`;
    open.setAttribute('aria-label', `Open ${label}`);
    const name = el('span', 'jp-MemoryPanel-name');
    const [head, tail] = this._cuts?.get(label) ?? [label, ''];
    name.append(el('span', 'jp-MemoryPanel-nameHead', head));
    if (tail) {
      name.append(el('span', 'jp-MemoryPanel-nameTail', tail));
    }
    const age = el('span', 'jp-MemoryPanel-age', ageText(memory.age_days));
    if (memory.mtime) {
      age.title = memory.mtime;
    }
    open.append(name);
    if (memory.scope === 'team') {
      // Shared with the whole team through the team folder (docs/reference.md#team-mode).
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
    forget.tabIndex = -1;
    forget.title = `Forget ${label}`;
    forget.setAttribute('aria-label', `Forget ${label}`);
    deleteIcon.element({ container: forget, tag: 'span' });
    forget.addEventListener('click', () => void this._forget(memory));

    const main = el('div', 'jp-MemoryPanel-cell');
    main.setAttribute('role', 'gridcell');
    main.append(open);
    const described: string[] = [];
    const addText = (className: string, text: string): void => {
      const node = el('p', className, text);
      node.id = `${id}-${described.length}`;
      described.push(node.id);
      main.append(node);
    };
    if (memory.description) {
      addText('jp-MemoryPanel-description', memory.description);
    }
    if (memory.indexed === false) {
      addText(
        'jp-MemoryPanel-note',
        'Not in MEMORY.md: index-mode recall never sees it.'
      );
    } else if (memory.loaded === false && memory.loaded_reason) {
      addText('jp-MemoryPanel-note', `Not loaded: ${memory.loaded_reason}.`);
    }
    if (described.length > 0) {
      open.setAttribute('aria-describedby', described.join(' '));
    }
    const actions = el('div', 'jp-MemoryPanel-cell jp-MemoryPanel-actions');
    actions.setAttribute('role', 'gridcell');
    actions.append(forget);
    item.append(main, actions);
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
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Forget' })],
      // The safe button has the focus: Enter keeps the memory, Forget needs a choice.
      defaultButton: 0
    });
    if (!result.button.accept) {
      return;
    }
    // The focus goes on to the next memory (or the one before) once this one is gone.
    const rows = this._rows();
    const at = rows.findIndex(row => row.dataset.file === memory.file);
    const wasActive = this._activeFile === memory.file;
    try {
      await MemoryAPI.forget(this._path, memory.file);
    } catch (error) {
      this._setStatus(describe(error), true);
      return;
    }
    if (wasActive && at >= 0) {
      const neighbour = rows[at + 1] ?? rows[at - 1];
      this._activeFile = neighbour?.dataset.file ?? null;
      this._focusAfterRender = true;
    }
    await this.refresh();
    this._setStatus(
      `Forgot ${label}. ${this._statusNode.textContent ?? ''}`,
      this._statusNode.classList.contains('jp-mod-error')
    );
  }

  private _options: IMemoryPanelOptions;
  private _path = '';
  private _context: DocumentRegistry.IContext<DocumentRegistry.IModel> | null =
    null;
  private _reply: IListReply | null = null;
  private _findings: IFinding[] = [];
  private _error: string | null = null;
  private _staleSince: Date | null = null;
  private _stamp: string | null = null;
  private _generation = 0;
  private _poll: Poll | null = null;
  private _views = new Map<string, MainAreaWidget<MemoryView>>();
  private _where!: HTMLDivElement;
  private _search!: HTMLInputElement;
  private _statusNode!: HTMLDivElement;
  private _stickyNode!: HTMLDivElement;
  private _doctorNode!: HTMLElement;
  private _listNode!: HTMLDivElement;
  /** The memories shown, by file, for the keys that act on a row. */
  private _shown = new Map<string, IMemory>();
  /** The file and the cell (0 open, 1 forget) holding the list's tab stop. */
  private _activeFile: string | null = null;
  private _activeCol = 0;
  private _focusAfterRender = false;
  private _cuts: Map<string, [string, string]> | null = null;
  private _cutsFor: IListReply | null = null;
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

/**
 * The status of a list kept after a failed reload: what failed, since when the
 * list is stale (local time), and that the panel keeps trying.
 */
export function staleText(
  error: string,
  since: Date,
  pollInterval: number = POLL_INTERVAL
): string {
  const hhmm = `${String(since.getHours()).padStart(2, '0')}:${String(
    since.getMinutes()
  ).padStart(2, '0')}`;
  const every = Math.round(pollInterval / 1000);
  return (
    `Could not reload the memories: ${error}. The list below is stale since ` +
    `${hhmm}; retrying every ${every}s or more, backing off.`
  );
}

/** A short stable id for a path (djb2), usable in DOM ids. */
function hashId(text: string): string {
  let hash = 5381;
  for (let i = 0; i < text.length; i++) {
    hash = ((hash << 5) + hash + text.charCodeAt(i)) | 0;
  }
  return (hash >>> 0).toString(36);
}
