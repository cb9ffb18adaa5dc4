import {
  ELSEWHERE,
  readableRecord,
  requestView,
  resolveRefs
} from '../turnrequests';

const output = 'x'.repeat(300);
const parts = {
  sha256_out: output,
  sha256_decisions: [{ file: 'a.md', decision: 'injected' }],
  sha256_m: {
    role: 'user',
    content: [
      {
        type: 'tool_result',
        tool_use_id: 't1',
        content: { $part: 'sha256_out' }
      }
    ]
  },
  sha256_c: { prefix: null, messages: ['sha256_m'] }
};

describe('version-3 text parts', () => {
  it('puts back the texts of tool calls, messages and decisions', () => {
    const record = readableRecord({
      version: 3,
      tool_calls: [
        { name: 'Read', input: {}, result: { $part: 'sha256_out' } }
      ],
      messages: [{ role: 'user', content: { $part: 'sha256_gone' } }],
      recall: { mode: 'index', decisions: { $part: 'sha256_decisions' } },
      parts
    });
    expect(record.tool_calls[0].result).toBe(output);
    expect(record.messages[0].content).toBe(ELSEWHERE);
    expect(record.recall.decisions).toEqual([
      { file: 'a.md', decision: 'injected' }
    ]);
  });

  it('finds parts of an output rendered before, and unwraps literals', () => {
    readableRecord({ version: 3, parts: { sha256_early: 'from before' } });
    expect(
      resolveRefs(
        [{ $part: 'sha256_early' }, { $literal: { $part: 'kept' } }],
        () => undefined
      )
    ).toEqual([ELSEWHERE, { $part: 'kept' }]);
    const later = readableRecord({
      version: 3,
      tool_calls: [{ result: { $part: 'sha256_early' } }]
    });
    expect(later.tool_calls[0].result).toBe('from before');
  });

  it('rebuilds a request whose message parts refer to texts', () => {
    const entry = {
      round: 0,
      digest: 'd',
      params: {},
      conversation: 'sha256_c'
    };
    const view = requestView(entry, parts, 3);
    expect(view.missing).toEqual([]);
    expect(view.body?.messages).toEqual([
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 't1', content: output }]
      }
    ]);
    // a text no output rendered on this page holds
    const unseen = {
      sha256_m9: {
        role: 'user',
        content: [{ type: 'text', text: { $part: 'sha256_unseen' } }]
      },
      sha256_c9: { prefix: null, messages: ['sha256_m9'] }
    };
    const lost = { ...entry, conversation: 'sha256_c9' };
    expect(requestView(lost, unseen, 3).missing).toEqual(['text']);
    // before version 3 a "$part" in a message was the model's own text
    expect(
      requestView(entry, parts, 2).body?.messages[0].content[0].content
    ).toEqual({
      $part: 'sha256_out'
    });
  });
});
