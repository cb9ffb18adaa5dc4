/**
 * @jest-environment jsdom
 *
 * Before the live layer of a view is made, the notebook's widget manager is asked
 * whether it holds the model: jupyterlab-manager's renderer would otherwise log
 * "widget model not found" on the console for every view of a reopened notebook.
 */
jest.mock('@jupyterlab/notebook', () => ({ INotebookTracker: {} }));
jest.mock('@jupyterlab/rendermime', () => ({
  IRenderMimeRegistry: {},
  MimeModel: class {}
}));
jest.mock('@lumino/widgets', () => ({ Panel: class {}, Widget: class {} }));

import { widgetModelExists } from '../widgetview';

/** A widget manager holding `models`, restored or not yet. */
function manager(models: string[], restored: boolean) {
  const slots: (() => void)[] = [];
  return {
    restoredStatus: restored,
    has_model: (id: string) => models.includes(id),
    restored: {
      connect: (slot: () => void) => slots.push(slot),
      disconnect: (slot: () => void) => slots.splice(slots.indexOf(slot), 1)
    },
    restore(): void {
      this.restoredStatus = true;
      [...slots].forEach(slot => slot());
    },
    slots
  };
}

/** A widget renderer as jupyterlab-manager makes it: its manager in `_manager`. */
function renderer(value: unknown): any {
  return { _manager: { promise: Promise.resolve(value) } };
}

describe('widgetModelExists', () => {
  it('answers from the manager once it has restored', async () => {
    const found = manager(['abc'], true);
    await expect(widgetModelExists(renderer(found), 'abc')).resolves.toBe(true);
    await expect(widgetModelExists(renderer(found), 'gone')).resolves.toBe(
      false
    );
  });

  it('waits for the manager to restore the models it can', async () => {
    const later = manager(['abc'], false);
    const answer = widgetModelExists(renderer(later), 'abc');
    await Promise.resolve();
    await Promise.resolve();
    expect(later.slots).toHaveLength(1);
    later.restore();
    await expect(answer).resolves.toBe(true);
    expect(later.slots).toHaveLength(0);
  });

  it('tries the live layer when the renderer has no manager it can ask', async () => {
    await expect(widgetModelExists({} as any, 'abc')).resolves.toBe(true);
    await expect(widgetModelExists(renderer({}), 'abc')).resolves.toBe(true);
  });
});
