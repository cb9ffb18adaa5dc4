/**
 * @jest-environment jsdom
 *
 * The static copy a widget output carries is HTML from a file anyone can write
 * once the notebook is saved: it is cleaned before JupyterLab renders it.
 */
jest.mock('@jupyterlab/notebook', () => ({ INotebookTracker: {} }));
jest.mock('@jupyterlab/rendermime', () => ({
  IRenderMimeRegistry: {},
  MimeModel: class {
    constructor(options: Record<string, unknown>) {
      Object.assign(this, options);
    }
  }
}));
jest.mock('@lumino/widgets', () => ({ Panel: class {}, Widget: class {} }));

import { staticModel } from '../widgetview';
import { PAYLOADS, problems } from './pagechecks';

function model(data: Record<string, unknown>, trusted: boolean): any {
  return { data, metadata: {}, trusted, setData: () => undefined };
}

describe('staticModel', () => {
  it('cleans the HTML copy and keeps the output trusted or not as it was', () => {
    const html =
      "<div class='jupyter-memory-memories' style='color:var(--jp-ui-font-color1, #1f1f1f)'>" +
      `<b>Memories</b>${PAYLOADS.join('')}</div>`;
    for (const trusted of [true, false]) {
      const cleaned = staticModel(
        model({ 'text/html': html }, trusted),
        'text/html'
      );
      expect(cleaned.trusted).toBe(trusted);
      const out = String(cleaned.data['text/html']);
      expect(problems(out)).toEqual([]);
      expect(out).toContain(
        '<div class="jupyter-memory-memories" style="color:var(--jp-ui-font-color1, #1f1f1f)">' +
          '<b>Memories</b>'
      );
    }
  });

  it('leaves the text copy alone', () => {
    const text = model({ 'text/plain': '<img src=x onerror=alert(1)>' }, true);
    expect(staticModel(text, 'text/plain')).toBe(text);
  });
});
