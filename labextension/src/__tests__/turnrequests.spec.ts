import {
  conversationDigests,
  recordParts,
  requestView,
  requestViews
} from '../turnrequests';

const system = [{ type: 'text', text: 'You help.' }];
const tools = [{ name: 'Read', input_schema: { type: 'object' } }];
const hi = { role: 'user', content: [{ type: 'text', text: 'hi' }] };
const hello = { role: 'assistant', content: [{ type: 'text', text: 'hello' }] };
const more = { role: 'user', content: [{ type: 'text', text: 'more' }] };

const first = {
  sha256_s: system,
  sha256_t: tools,
  sha256_m1: hi,
  sha256_c1: { prefix: null, messages: ['sha256_m1'] }
};
const second = {
  sha256_m2: hello,
  sha256_m3: more,
  sha256_c2: { prefix: 'sha256_c1', messages: ['sha256_m2', 'sha256_m3'] }
};
const entry = {
  round: 0,
  digest: 'sha256:abc',
  params: { model: 'm', max_tokens: 10 },
  system: 'sha256_s',
  tools: 'sha256_t',
  conversation: 'sha256_c2',
  cache_marks: [[2, 0, { type: 'ephemeral' }]]
};

describe('turnrequests', () => {
  it('follows the conversation chain from its first part', () => {
    expect(conversationDigests('sha256_c2', { ...first, ...second })).toEqual({
      digests: ['sha256_m1', 'sha256_m2', 'sha256_m3'],
      complete: true
    });
    expect(conversationDigests('sha256_c2', second).complete).toBe(false);
  });

  it('rebuilds the body when every part is at hand', () => {
    const view = requestView(entry, { ...first, ...second });
    expect(view.missing).toEqual([]);
    expect(view.body).toEqual({
      model: 'm',
      max_tokens: 10,
      system,
      tools,
      messages: [
        hi,
        hello,
        {
          role: 'user',
          content: [
            { ...more.content[0], cache_control: { type: 'ephemeral' } }
          ]
        }
      ]
    });
    // the parts themselves are not changed by putting the marks back
    expect(more.content[0]).toEqual({ type: 'text', text: 'more' });
  });

  it('names the parts that live in an earlier output', () => {
    const view = requestView(entry, second);
    expect(view.body).toBeNull();
    expect(view.missing).toEqual(['system', 'conversation', 'tools']);
    const noMessage = requestView(entry, {
      ...first,
      ...second,
      sha256_m2: undefined
    });
    expect(noMessage.missing).toEqual(['message']);
  });

  it('reads version-1 records, which carry whole bodies', () => {
    const body = { model: 'm', messages: [hi] };
    expect(
      requestViews({ version: 1, requests: [{ round: 0, digest: 'd', body }] })
    ).toEqual([{ round: 0, digest: 'd', body, missing: [] }]);
    expect(requestViews({})).toEqual([]);
  });

  it('reads a version-4 record, whose structured parts are JSON text', () => {
    const json = (value: unknown): string => JSON.stringify(value);
    const record = {
      version: 4,
      requests: [entry],
      parts: {},
      json_parts: Object.fromEntries(
        Object.entries({ ...first, ...second }).map(([d, v]) => [d, json(v)])
      )
    };
    const [view] = requestViews(record);
    expect(view.missing).toEqual([]);
    expect(view.body?.system).toEqual(system);
    expect((view.body?.messages as unknown[]).length).toBe(3);
    // a text part stays a string; a part that is not JSON is not a part
    const parts = recordParts({
      parts: { sha256_x: 'a text' },
      json_parts: { sha256_s: json(system), sha256_bad: '{"role":' }
    });
    expect(parts).toEqual({ sha256_x: 'a text', sha256_s: system });
    // (a digest no output on this page stored before)
    const broken = {
      ...record,
      requests: [{ ...entry, tools: 'sha256_t4' }],
      json_parts: { ...record.json_parts, sha256_t4: '[{"name":' }
    };
    expect(requestViews(broken)[0].missing).toEqual(['tools']);
  });

  it('stops at a chain that loops', () => {
    const loop = { sha256_c: { prefix: 'sha256_c', messages: [] } };
    expect(conversationDigests('sha256_c', loop).complete).toBe(false);
  });
});
