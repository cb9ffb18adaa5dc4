/**
 * Rebuild the model requests of a turn record from its content-addressed parts.
 *
 * A version-2 record (jupyter_memory/schemas/turn-record.v2.json) keeps each
 * request as references: `params`, the digests of its `system` and `tools`
 * block lists, a `conversation` part chaining message digests, and
 * `cache_marks`. A part is stored once, in the first output of the session
 * that needed it, so a renderer that sees one output can rebuild a request
 * only when every part it needs is in that output; otherwise it says which
 * parts live in an earlier output. Version-1 records carried whole bodies.
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

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Message digests of a conversation part, following its prefix chain. */
export function conversationDigests(
  digest: string,
  parts: Parts
): { digests: string[]; complete: boolean } {
  const chunks: string[][] = [];
  const seen = new Set<string>();
  let current: string | null = digest;
  while (current !== null) {
    const part: unknown = parts[current];
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
export function requestView(entry: unknown, parts: Parts): IRequestView {
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
    if (parts[ref.system] !== undefined) {
      body.system = clone(parts[ref.system]);
    } else {
      missing.push('system');
    }
  }
  let messages: Array<Record<string, any>> = [];
  if (typeof ref.conversation === 'string') {
    const chain = conversationDigests(ref.conversation, parts);
    if (!chain.complete) {
      missing.push('conversation');
    } else if (chain.digests.some(d => parts[d] === undefined)) {
      missing.push('message');
    } else {
      messages = chain.digests.map(d => clone(parts[d]) as Record<string, any>);
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
    if (parts[ref.tools] !== undefined) {
      body.tools = clone(parts[ref.tools]);
    } else {
      missing.push('tools');
    }
  }
  return { round, digest, body: missing.length ? null : body, missing };
}

/** Every request of a record (version 1 or 2), rebuilt where its parts allow. */
export function requestViews(
  record: Partial<TurnRecord> | Record<string, unknown>
): IRequestView[] {
  const requests = Array.isArray(record.requests) ? record.requests : [];
  const parts = isObject(record.parts) ? (record.parts as Parts) : {};
  return requests.map(entry => requestView(entry, parts));
}
