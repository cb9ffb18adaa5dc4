/**
 * @jest-environment jsdom
 *
 * The Memory panel's logic, with the REST client and JupyterLab's widgets
 * replaced by small fakes: what a memory row says when its pointer line does not
 * load, that a failed reload keeps the list (marked stale since a time, saying
 * what failed and that it retries), that Forget asks with the safe button
 * focused, and the list's keyboard use: one tab stop, arrows, Home/End, Delete.
 */
const api = {
  list: jest.fn(),
  doctor: jest.fn(),
  stamp: jest.fn(),
  forget: jest.fn()
};
const dialogs: any[] = [];
let dialogAccepts = false;

jest.mock('../api', () => ({
  MemoryAPI: api,
  MemoryAPIError: class MemoryAPIError extends Error {
    extensionMissing = false;
  }
}));
jest.mock('@lumino/widgets', () => ({
  Widget: class {
    node = document.createElement('div');
    id = '';
    title = { icon: null, caption: '' };
    isVisible = false;
    constructor(options?: { node?: HTMLElement }) {
      if (options?.node) {
        this.node = options.node;
      }
    }
    addClass(name: string): void {
      this.node.classList.add(name);
    }
    dispose(): void {
      this.node.remove();
    }
  }
}));
jest.mock('@lumino/polling', () => ({ Poll: class {} }));
jest.mock('@jupyterlab/ui-components', () => {
  const icon = { element: () => document.createElement('span') };
  return { LabIcon: class {}, deleteIcon: icon, refreshIcon: icon };
});
jest.mock('@jupyterlab/apputils', () => ({
  MainAreaWidget: class {},
  Dialog: {
    cancelButton: () => ({ label: 'Cancel', accept: false }),
    warnButton: (o: any) => ({ ...o, accept: true })
  },
  showDialog: async (options: any) => {
    dialogs.push(options);
    return { button: { accept: dialogAccepts } };
  }
}));

import { MemoryPanel, staleText } from '../panel';

const REPLY = {
  location: { memdir: '/m', project_root: '/p/sales', enabled: true },
  recall_mode: 'index',
  stamp: 's1',
  memories: [
    {
      file: 'project_a.md',
      name: 'alpha',
      type: 'project',
      indexed: true,
      loaded: true,
      loaded_reason: 'its pointer on line 1 of MEMORY.md is in every request'
    },
    {
      file: 'project_b.md',
      name: 'beta',
      type: 'project',
      indexed: true,
      loaded: false,
      loaded_reason:
        'its pointer is on line 201 of MEMORY.md, past the 200-line limit: the model never sees it'
    }
  ]
};

function panel(): MemoryPanel {
  api.list.mockReset();
  api.doctor.mockReset().mockResolvedValue({ findings: [] });
  dialogs.length = 0;
  dialogAccepts = false;
  return new MemoryPanel({ docManager: null, addToMainArea: () => undefined });
}

function rows(p: MemoryPanel): string[] {
  return Array.from(p.node.querySelectorAll('.jp-MemoryPanel-item')).map(
    item => (item as HTMLElement).dataset.file ?? ''
  );
}

function status(p: MemoryPanel): string {
  return p.node.querySelector('.jp-MemoryPanel-status')?.textContent ?? '';
}

test('a memory whose pointer line does not load says so, with the reason', async () => {
  const p = panel();
  api.list.mockResolvedValue(REPLY);
  await p.refresh();
  expect(rows(p)).toEqual(['project_a.md', 'project_b.md']);
  const notes = Array.from(p.node.querySelectorAll('.jp-MemoryPanel-note')).map(
    n => n.textContent
  );
  expect(notes).toEqual([
    'Not loaded: its pointer is on line 201 of MEMORY.md, past the 200-line limit: the model never sees it.'
  ]);
  expect(status(p)).toBe('2 memories.');
});

test('a failed reload keeps the list, marked stale since the first failure', async () => {
  const p = panel();
  api.list.mockResolvedValueOnce(REPLY);
  await p.refresh();
  api.list.mockRejectedValue(new Error('Failed to fetch'));
  await p.refresh();
  expect(rows(p)).toEqual(['project_a.md', 'project_b.md']);
  const list = p.node.querySelector('.jp-MemoryPanel-list')!;
  expect(list.classList.contains('jp-mod-stale')).toBe(true);
  expect(status(p)).toMatch(
    /^Could not reload the memories: Failed to fetch\. The list below is stale since \d\d:\d\d; retrying/
  );
  // A later failure keeps the first time; a success clears the mark.
  const first = status(p);
  await p.refresh();
  expect(status(p)).toBe(first);
  api.list.mockResolvedValue(REPLY);
  await p.refresh();
  expect(list.classList.contains('jp-mod-stale')).toBe(false);
  expect(status(p)).toBe('2 memories.');
});

test('a failure with no list yet says what failed and that it retries', async () => {
  const p = panel();
  api.list.mockRejectedValue(new Error('Internal Server Error'));
  await p.refresh();
  expect(rows(p)).toEqual([]);
  expect(status(p)).toBe(
    'Could not load the memories: Internal Server Error. Retrying, backing off.'
  );
});

test('the stale text names the local time and the retry interval', () => {
  const since = new Date(2026, 2, 1, 9, 5);
  expect(staleText('Not Found', since, 3000)).toBe(
    'Could not reload the memories: Not Found. The list below is stale since 09:05; retrying every 3s or more, backing off.'
  );
});

test('Forget asks with the safe button focused', async () => {
  const p = panel();
  api.list.mockResolvedValue(REPLY);
  await p.refresh();
  const forget = p.node.querySelector(
    '[data-file="project_a.md"] .jp-MemoryPanel-forget'
  ) as HTMLButtonElement;
  forget.click();
  await Promise.resolve();
  expect(dialogs).toHaveLength(1);
  const { buttons, defaultButton } = dialogs[0];
  expect(buttons[defaultButton].accept).toBe(false);
  expect(api.forget).not.toHaveBeenCalled();
});

const MANY = {
  ...REPLY,
  memories: ['a', 'b', 'c', 'd'].map(letter => ({
    file: `project_${letter}.md`,
    name: `quarterly-revenue-report-region-${letter}`,
    description: `Report ${letter}`,
    type: 'project',
    indexed: true,
    loaded: true
  }))
};

async function shownPanel(reply: unknown = MANY): Promise<MemoryPanel> {
  const p = panel();
  document.body.textContent = '';
  document.body.append(p.node);
  api.list.mockResolvedValue(reply);
  await p.refresh();
  return p;
}

function press(key: string): void {
  const target = document.activeElement as HTMLElement;
  target.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
}

/** The focused memory's file and cell ('open' or 'forget'). */
function focused(): string {
  const active = document.activeElement as HTMLElement;
  const row = active.closest<HTMLElement>('.jp-MemoryPanel-item');
  const cell = active.classList.contains('jp-MemoryPanel-forget')
    ? 'forget'
    : 'open';
  return `${row?.dataset.file} ${cell}`;
}

function tabStops(p: MemoryPanel): HTMLElement[] {
  return Array.from(
    p.node.querySelectorAll<HTMLElement>('.jp-MemoryPanel-list button')
  ).filter(b => b.tabIndex === 0);
}

test('the list is a grid with one tab stop, on the first memory', async () => {
  const p = await shownPanel();
  const grid = p.node.querySelector('.jp-MemoryPanel-list')!;
  expect(grid.getAttribute('role')).toBe('grid');
  expect(grid.getAttribute('aria-label')).toBe('Memories');
  expect(
    grid.querySelectorAll('[role="row"].jp-MemoryPanel-item')
  ).toHaveLength(4);
  const stops = tabStops(p);
  expect(stops).toHaveLength(1);
  expect(stops[0].getAttribute('aria-label')).toBe(
    'Open quarterly-revenue-report-region-a'
  );
});

test('arrows, Home and End move the focus and the tab stop', async () => {
  const p = await shownPanel();
  tabStops(p)[0].focus();
  expect(focused()).toBe('project_a.md open');
  press('ArrowDown');
  press('ArrowDown');
  expect(focused()).toBe('project_c.md open');
  press('ArrowRight');
  expect(focused()).toBe('project_c.md forget');
  press('ArrowRight');
  expect(focused()).toBe('project_c.md forget');
  press('ArrowUp');
  expect(focused()).toBe('project_b.md forget');
  press('ArrowLeft');
  press('End');
  expect(focused()).toBe('project_d.md open');
  press('ArrowDown');
  expect(focused()).toBe('project_d.md open');
  press('Home');
  expect(focused()).toBe('project_a.md open');
  press('ArrowUp');
  expect(focused()).toBe('project_a.md open');
  press('PageDown');
  expect(focused()).toBe('project_d.md open');
  expect(tabStops(p)).toEqual([document.activeElement]);
});

test('ArrowDown in the search box enters the list', async () => {
  const p = await shownPanel();
  const search = p.node.querySelector<HTMLInputElement>(
    'input[type="search"]'
  )!;
  search.focus();
  press('ArrowDown');
  expect(focused()).toBe('project_a.md open');
});

test('a reload keeps the focus on the same memory', async () => {
  const p = await shownPanel();
  tabStops(p)[0].focus();
  press('ArrowDown');
  press('ArrowDown');
  await p.refresh();
  expect(focused()).toBe('project_c.md open');
  expect(tabStops(p)).toHaveLength(1);
});

test('Delete asks to forget the focused memory; forgetting moves on to the next', async () => {
  const p = await shownPanel();
  tabStops(p)[0].focus();
  press('ArrowDown');
  press('Delete');
  await Promise.resolve();
  expect(dialogs).toHaveLength(1);
  expect(api.forget).not.toHaveBeenCalled();

  dialogAccepts = true;
  api.forget.mockResolvedValue({});
  api.list.mockResolvedValue({
    ...MANY,
    memories: MANY.memories.filter(m => m.file !== 'project_b.md')
  });
  press('Delete');
  for (let i = 0; i < 10; i++) {
    await Promise.resolve();
  }
  await new Promise(resolve => setTimeout(resolve, 0));
  expect(api.forget).toHaveBeenCalledWith('', 'project_b.md');
  expect(rows(p)).toEqual(['project_a.md', 'project_c.md', 'project_d.md']);
  expect(focused()).toBe('project_c.md open');
  expect(status(p)).toBe(
    'Forgot quarterly-revenue-report-region-b. 3 memories.'
  );
});

test('a long name is cut in the middle, the whole name in its title and label', async () => {
  const long = {
    file: 'project_x.md',
    name: 'quarterly-revenue-report-for-the-northern-sales-region-2024',
    type: 'project'
  };
  const other = {
    ...long,
    file: 'project_y.md',
    name: long.name.replace('2024', '2025')
  };
  const p = await shownPanel({ ...REPLY, memories: [long, other] });
  const open = p.node.querySelector<HTMLElement>(
    '[data-file="project_x.md"] .jp-MemoryPanel-open'
  )!;
  expect(open.title).toBe(`${long.name}\nproject_x.md`);
  expect(open.getAttribute('aria-label')).toBe(`Open ${long.name}`);
  const head = open.querySelector('.jp-MemoryPanel-nameHead')!.textContent;
  const tail = open.querySelector('.jp-MemoryPanel-nameTail')!.textContent;
  expect(tail).toBe('ion-2024');
  expect(`${head}${tail}`).toBe(long.name);
});
