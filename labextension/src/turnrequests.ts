/**
 * Rebuild the model requests of a turn record from its content-addressed parts.
 *
 * A version-2 record keeps each request as references: `params`, the digests
 * of its `system` and `tools` block lists, a `conversation` part chaining
 * message digests, and `cache_marks`. From version 3
 * (jupyter_memory/schemas/turn-record.v4.json) every long string of a message
 * part, of the record's `messages` and `tool_calls`, and the recall decisions
 * are parts too, referred to as `{"$part": DIGEST}`. From version 4 a record
 * keeps its text parts in `parts` and its structured parts in `json_parts`, as
 * their canonical JSON text. A part is stored once, in
 * the first output of the session that needed it: the renderer finds it in
 * this output or in one rendered before it on this page; otherwise it says
 * which parts live in an earlier output. Version-1 records carried whole
 * bodies.
 */
import type { ConversationPart, RequestEntry, TurnRecord } from './turnrecord';

/** One request of a turn as the renderer shows it. */
export interface IRequestView {
  round: number | null;
  digest: string;
  /** The exact body, when every part it needs is in this record. */
  body: Record<string, unknown> | null;
  /** Which parts live in an earlier output (system, tools, conversation, message). */
  missing: string[];
}

type Parts = Record<string, unknown>;
/** Finds a part by digest, or `undefined`. */
export type Lookup = (digest: string) => unknown;

/** What a view shows for a text kept in an output it cannot see. */
export const ELSEWHERE = '(kept once, in an earlier output of this notebook)';

/** Parts of the records rendered on this page so far (each part is immutable). */
const seen = new Map<string, unknown>();

/** Structured parts read from their JSON text, by digest and text. */
const decoded = new Map<string, { raw: string; value: unknown }>();

/**
 * Every part a record stores, by digest: its texts (`parts`) and, from
 * version 4, its structured parts read from their JSON (`json_parts`). A part
 * whose text is not JSON (a hand edit) is left out, so a view names it missing.
 */
export function recordParts(record: unknown): Parts {
  const out: Parts = {};
  if (!isObject(record)) {
    return out;
  }
  if (isObject(record.parts)) {
    Object.assign(out, record.parts);
  }
  if (isObject(record.json_parts)) {
    for (const [digest, raw] of Object.entries(record.json_parts)) {
      if (typeof raw !== 'string') {
        continue;
      }
      const known = decoded.get(digest);
      if (known !== undefined && known.raw === raw) {
        out[digest] = known.value;
        continue;
      }
      try {
        const value: unknown = JSON.parse(raw);
        decoded.set(digest, { raw, value });
        out[digest] = value;
      } catch {
        // not JSON: the part counts as missing
      }
    }
  }
  return out;
}

/** Remember the parts a record carries, for the outputs rendered after it. */
export function rememberParts(record: unknown): void {
  for (const [digest, part] of Object.entries(recordParts(record))) {
    seen.set(digest, part);
  }
}

/** A lookup in `parts`, then in the parts of records rendered before. */
export function lookupIn(parts: Parts | Lookup): Lookup {
  if (typeof parts === 'function') {
    return parts;
  }
  return digest =>
    Object.prototype.hasOwnProperty.call(parts, digest)
      ? parts[digest]
      : seen.get(digest);
}

function isRef(value: unknown): value is { $part: string } {
  return (
    isObject(value) &&
    Object.keys(value).length === 1 &&
    typeof value.$part === 'string'
  );
}

/**
 * `value` with every `{"$part": DIGEST}` replaced by its part (`missing` for
 * one not found) and every `{"$literal": {...}}` unwrapped.
 */
export function resolveRefs(
  value: unknown,
  lookup: Lookup,
  missing: (digest: string) => unknown = () => ELSEWHERE
): unknown {
  if (Array.isArray(value)) {
    return value.map(item => resolveRefs(item, lookup, missing));
  }
  if (!isObject(value)) {
    return value;
  }
  if (isRef(value)) {
    const found = lookup(value.$part);
    return found === undefined ? missing(value.$part) : clone(found);
  }
  let inner: Record<string, unknown> = value;
  if (Object.keys(value).length === 1 && isObject(value.$literal)) {
    inner = value.$literal;
  }
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(inner)) {
    out[key] = key === '_meta' ? item : resolveRefs(item, lookup, missing);
  }
  return out;
}

/**
 * A record as the renderer shows it: its tool calls, messages and recall
 * decisions with their texts put back (version 3), those it cannot find
 * shown as {@link ELSEWHERE}. Remembers the record's parts.
 */
export function readableRecord<T extends Record<string, any>>(record: T): T {
  rememberParts(record);
  if (typeof record.version !== 'number' || record.version < 3) {
    return record;
  }
  const lookup = lookupIn(recordParts(record));
  const out: Record<string, any> = { ...record };
  for (const section of ['messages', 'tool_calls']) {
    if (section in out) {
      out[section] = resolveRefs(out[section], lookup);
    }
  }
  if (isObject(out.recall) && 'decisions' in out.recall) {
    const decisions = resolveRefs(out.recall.decisions, lookup, () => []);
    out.recall = {
      ...out.recall,
      decisions: Array.isArray(decisions) ? decisions : []
    };
  }
  return out as T;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Message digests of a conversation part, following its prefix chain. */
export function conversationDigests(
  digest: string,
  parts: Parts | Lookup
): { digests: string[]; complete: boolean } {
  const find = lookupIn(parts);
  const chunks: string[][] = [];
  const seen = new Set<string>();
  let current: string | null = digest;
  while (current !== null) {
    const part: unknown = find(current);
    if (seen.has(current) || !isObject(part)) {
      return { digests: [], complete: false };
    }
    seen.add(current);
    const conversation = part as unknown as ConversationPart;
    chunks.push(
      Array.isArray(conversation.messages) ? conversation.messages : []
    );
    current =
      typeof conversation.prefix === 'string' ? conversation.prefix : null;
  }
  return { digests: chunks.reverse().flat(), complete: true };
}

/** Rebuild one request entry from the parts at hand (see the module comment). */
export function requestView(
  entry: unknown,
  parts: Parts | Lookup,
  version = 2
): IRequestView {
  const find = lookupIn(parts);
  const raw = isObject(entry) ? entry : {};
  const round = typeof raw.round === 'number' ? raw.round : null;
  const digest = typeof raw.digest === 'string' ? raw.digest : '';
  if (isObject(raw.body)) {
    return { round, digest, body: clone(raw.body), missing: [] };
  }
  const ref = raw as Partial<RequestEntry>;
  const missing: string[] = [];
  const body: Record<string, unknown> = isObject(ref.params)
    ? clone(ref.params)
    : {};
  if (typeof ref.system === 'string') {
    if (find(ref.system) !== undefined) {
      body.system = clone(find(ref.system));
    } else {
      missing.push('system');
    }
  }
  let messages: Array<Record<string, any>> = [];
  if (typeof ref.conversation === 'string') {
    const chain = conversationDigests(ref.conversation, find);
    let textMissing = false;
    const text = (): unknown => {
      textMissing = true;
      return ELSEWHERE;
    };
    if (!chain.complete) {
      missing.push('conversation');
    } else if (chain.digests.some(d => find(d) === undefined)) {
      missing.push('message');
    } else {
      messages = chain.digests.map(
        d =>
          (version >= 3
            ? resolveRefs(find(d), find, text)
            : clone(find(d))) as Record<string, any>
      );
      if (textMissing) {
        missing.push('text');
      }
      for (const mark of ref.cache_marks ?? []) {
        const [i, j, control] = mark;
        const block = messages[i]?.content?.[j];
        if (isObject(block)) {
          block.cache_control = clone(control);
        }
      }
    }
  } else {
    missing.push('conversation');
  }
  body.messages = messages;
  if (typeof ref.tools === 'string') {
    if (find(ref.tools) !== undefined) {
      body.tools = clone(find(ref.tools));
    } else {
      missing.push('tools');
    }
  }
  return { round, digest, body: missing.length ? null : body, missing };
}

/** Every request of a record (any version), rebuilt where its parts allow. */
export function requestViews(
  record: Partial<TurnRecord> | Record<string, unknown>
): IRequestView[] {
  rememberParts(record);
  const requests = Array.isArray(record.requests) ? record.requests : [];
  const parts = recordParts(record);
  const version = typeof record.version === 'number' ? record.version : 1;
  return requests.map(entry => requestView(entry, parts, version));
}

/**
 * Each main request's number among the turn's calls, as `jupyter-memory
 * request` counts them: every call made during the turn (the record's `calls`
 * made during it, its `requests`), in the order sent, from 1.
 */
export function callNumbers(
  record: Partial<TurnRecord> | Record<string, unknown>
): number[] {
  const requests = Array.isArray(record.requests) ? record.requests : [];
  const calls = Array.isArray(record.calls) ? record.calls : [];
  const sent = (e: unknown): string =>
    isObject(e) && typeof e.sent === 'string' ? e.sent : '';
  const order: Array<[string, number, number]> = [
    ...requests.map((e, i): [string, number, number] => [sent(e), 0, i]),
    ...calls
      .filter(
        e => isObject(e) && e.during_turn === true && e.turn === record.turn
      )
      .map((e): [string, number, number] => [sent(e), 1, -1])
  ];
  order.sort((a, b) =>
    a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1] || a[2] - b[2]
  );
  const numbers = requests.map(() => 0);
  order.forEach(([, kind, i], n) => {
    if (kind === 0) {
      numbers[i] = n + 1;
    }
  });
  return numbers;
}

function indent(text: string, prefix: string): string {
  return text
    .split('\n')
    .map(line => (line ? prefix + line : prefix.trimEnd()))
    .join('\n');
}

function blocksOf(content: unknown): Record<string, unknown>[] {
  if (typeof content === 'string') {
    return [{ type: 'text', text: content }];
  }
  return Array.isArray(content) ? content.filter(isObject) : [];
}

function blockText(block: Record<string, unknown>): string {
  const mark = 'cache_control' in block ? ' [cache mark]' : '';
  if (block.type === 'text') {
    return `text${mark}:\n${indent(String(block.text ?? ''), '      ')}`;
  }
  if (block.type === 'tool_use') {
    return `tool_use ${String(block.name)} ${JSON.stringify(block.input ?? {})}${mark}`;
  }
  if (block.type === 'tool_result') {
    const texts = blocksOf(block.content)
      .filter(b => b.type === 'text')
      .map(b => String(b.text ?? ''));
    const body = texts.length
      ? texts.join('\n')
      : JSON.stringify(block.content ?? '');
    const error = block.is_error ? ' (error)' : '';
    return `tool_result${error}${mark}:\n${indent(body, '      ')}`;
  }
  return `${String(block.type)}${mark}`;
}

/**
 * A request body as readable text, as `jupyter-memory request` prints it: the
 * parameters, the system prompt as its text, the tools by name, then each
 * message and its blocks.
 */
export function requestText(body: Record<string, unknown>): string {
  const lines: string[] = [];
  const params = Object.entries(body).filter(
    ([key]) => !['system', 'tools', 'messages'].includes(key)
  );
  lines.push(params.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', '));
  if (body.system !== undefined) {
    const blocks = blocksOf(body.system);
    lines.push(
      `system (${blocks.length} block${blocks.length === 1 ? '' : 's'}):`,
      indent(
        blocks
          .filter(b => b.type === 'text')
          .map(b => String(b.text ?? ''))
          .join('\n'),
        '  '
      )
    );
  }
  if (Array.isArray(body.tools)) {
    const names = body.tools.filter(isObject).map(t => String(t.name));
    lines.push(`tools (${names.length}): ${names.join(', ')}`);
  }
  const messages = Array.isArray(body.messages)
    ? body.messages.filter(isObject)
    : [];
  lines.push(`messages (${messages.length}):`);
  messages.forEach((message, i) => {
    lines.push(`  [${i + 1}] ${String(message.role)}:`);
    for (const block of blocksOf(message.content)) {
      lines.push(`    ${blockText(block)}`);
    }
  });
  return lines.join('\n');
}
