/**
 * @jest-environment jsdom
 *
 * The turn renderer's context bar and header: the bar in the palette's colours
 * (palette.ts, generated from the Python palette), laid out as used, free, then
 * the autocompact buffer; a category keeps its class when another is missing;
 * the header's time is local and simulated usage is said to be simulated.
 */
jest.mock('@lumino/widgets', () => ({
  Widget: class {
    node = document.createElement('div');
    isAttached = false;
    addClass(name: string): void {
      this.node.classList.add(name);
    }
  }
}));
jest.mock('@jupyterlab/rendermime', () => ({
  removeMath: (text: string) => ({ text, math: [] }),
  replaceMath: (text: string) => text,
  renderHTML: async (options: any) => {
    options.host.textContent = options.source;
  }
}));

import { localTime } from '../format';
import { CATEGORIES } from '../palette';
import { barOrder, categoryColour, TURN_MIME, TurnRenderer } from '../turn';

function context(used: Record<string, number>): Record<string, unknown> {
  const total = Object.values(used).reduce((a, b) => a + b, 0);
  return {
    window: 200_000,
    used: total,
    thresholds: { autocompact: 167_000 },
    categories: [
      ...Object.entries(used).map(([name, tokens]) => ({ name, tokens })),
      // As the kernel stores them: the buffer before free.
      { name: 'autocompact buffer', tokens: 33_000 },
      { name: 'free', tokens: 200_000 - total - 33_000 }
    ]
  };
}

async function render(record: Record<string, unknown>): Promise<HTMLElement> {
  const renderer = new TurnRenderer({
    mimeType: TURN_MIME,
    sanitizer: { sanitize: (html: string) => html },
    resolver: null,
    linkHandler: null,
    latexTypesetter: null
  } as any);
  await renderer.renderModel({ data: { [TURN_MIME]: record } } as any);
  return renderer.node;
}

function segments(node: HTMLElement): Array<[string, string]> {
  return Array.from(node.querySelectorAll('.jp-MemoryTurn-segment')).map(s => [
    (s as HTMLElement).title.split(':')[0],
    Array.from(s.classList).find(c => c.startsWith('jm-cat-')) ?? ''
  ]);
}

describe('the turn context bar', () => {
  it('draws used, then free, then the autocompact buffer', async () => {
    const node = await render({
      turn: 1,
      answer: 'ok',
      context: context({ system: 3000, tools: 2300, messages: 23_600 })
    });
    expect(segments(node).map(([name]) => name)).toEqual([
      'system',
      'tools',
      'messages',
      'free',
      'autocompact buffer'
    ]);
    const bar = node.querySelector('.jp-MemoryTurn-bar') as HTMLElement;
    expect(bar.classList).toContain('jm-bar-track');
    const free = node.querySelector('.jm-cat-free') as HTMLElement;
    // free runs to the autocompact line: 200K - 28.9K - 33K of 200K
    expect(parseFloat(free.style.width)).toBeCloseTo(69.05, 1);
  });

  it('keeps each category in its colour when another is missing', async () => {
    const full = await render({
      context: context({ system: 1, tools: 1, index: 1, messages: 1 })
    });
    const few = await render({ context: context({ system: 1, messages: 1 }) });
    const classes = (node: HTMLElement) => Object.fromEntries(segments(node));
    expect(classes(few).messages).toBe(classes(full).messages);
    expect(classes(few).system).toBe(classes(full).system);
    expect(classes(full).tools).toBe('jm-cat-tools');
    expect(classes(full).tools).not.toBe(classes(full).messages);
  });

  it('tags each legend swatch, unknown categories included', async () => {
    const node = await render({
      context: context({ system: 5, skills: 4 })
    });
    const tags = Array.from(node.querySelectorAll('.jp-MemoryTurn-swatch')).map(
      s => s.textContent
    );
    expect(tags).toEqual(['S', '?', 'F', 'B']);
    expect(categoryColour('skills').className).toBe('jm-cat-other');
  });

  it('orders by the palette, whatever order the record keeps', () => {
    const names = barOrder([
      { name: 'free' },
      { name: 'messages' },
      { name: 'autocompact buffer' },
      { name: 'system' }
    ]).map(c => c.name);
    expect(names).toEqual(['system', 'messages', 'free', 'autocompact buffer']);
    expect(CATEGORIES.map(c => c.name).slice(-2)).toEqual([
      'free',
      'autocompact buffer'
    ]);
  });
});

describe('the turn header', () => {
  it('shows the time local and readable, not as UTC ISO', async () => {
    const node = await render({ turn: 2, ended: '2026-12-01T21:50:00+00:00' });
    const header = node.querySelector('.jp-MemoryTurn-header')!.textContent!;
    expect(header).not.toContain('2026-12-01T21:50');
    expect(header).toContain(localTime('2026-12-01T21:50:00+00:00'));
    expect(localTime('not a time')).toBe('not a time');
  });

  it('says when usage is simulated by the local server', async () => {
    const usage = { input_tokens: 10, output_tokens: 5 };
    const simulated = await render({
      usage,
      cost: [{ kind: 'main', simulated: true }]
    });
    const real = await render({ usage, cost: [{ kind: 'main' }] });
    const text = (n: HTMLElement) =>
      n.querySelector('.jp-MemoryTurn-header')!.textContent!;
    expect(text(simulated)).toContain('(simulated: the local server)');
    expect(text(real)).not.toContain('simulated');
  });
});
