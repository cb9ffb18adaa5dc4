/**
 * @jest-environment jsdom
 *
 * The Memory panel's logic, with the REST client and JupyterLab's widgets
 * replaced by small fakes: what a memory row says when its pointer line does not
 * load, that a failed reload keeps the list (marked stale since a time, saying
 * what failed and that it retries), and that Forget asks with the safe button
 * focused.
 */
const api = {
  list: jest.fn(),
  doctor: jest.fn(),
  stamp: jest.fn(),
  forget: jest.fn()
};
const dialogs: any[] = [];

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
    return { button: { accept: false } };
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
