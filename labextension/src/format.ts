/**
 * Small pure helpers shared by the panel and the turn renderer.
 */
import type { IMemory } from './api';

/** The four memory types, in the order the panel shows them. */
export const MEMORY_TYPES = ['user', 'feedback', 'project', 'reference'];

const TYPE_TITLES: Record<string, string> = {
  user: 'User',
  feedback: 'Feedback',
  project: 'Project',
  reference: 'Reference',
  other: 'Untyped'
};

/** The heading shown for a type group. */
export function typeTitle(type: string): string {
  return TYPE_TITLES[type] ?? type;
}

/** "today", "yesterday" or "N days ago", as the kernel's freshness notes say it. */
export function ageText(days: number | null | undefined): string {
  if (days === null || days === undefined || !isFinite(days)) {
    return '';
  }
  if (days <= 0) {
    return 'today';
  }
  if (days === 1) {
    return 'yesterday';
  }
  return `${Math.floor(days)} days ago`;
}

/**
 * A record's UTC ISO time as a local, readable one ("1 Dec 2026, 21:50");
 * text that is not a time is returned as it is.
 */
export function localTime(iso: string, locale?: string): string {
  const date = new Date(iso);
  if (!iso || isNaN(date.getTime())) {
    return iso;
  }
  return date.toLocaleString(locale, {
    dateStyle: 'medium',
    timeStyle: 'short'
  });
}

/** Group memories by type: known types first in their fixed order, then the rest. */
export function groupByType(memories: IMemory[]): Array<[string, IMemory[]]> {
  const groups = new Map<string, IMemory[]>();
  for (const memory of memories) {
    const type =
      memory.type && MEMORY_TYPES.includes(memory.type) ? memory.type : 'other';
    const list = groups.get(type) ?? [];
    list.push(memory);
    groups.set(type, list);
  }
  const order = [...MEMORY_TYPES, 'other'];
  return order
    .filter(type => groups.has(type))
    .map(type => [type, groups.get(type)!] as [string, IMemory[]]);
}

/**
 * Whether a memory matches a search query: every word of the query must occur
 * in its name, description, file or type (case-insensitive).
 */
export function matchesQuery(memory: IMemory, query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) {
    return true;
  }
  const haystack = [memory.name, memory.description, memory.file, memory.type]
    .filter(Boolean)
    .join(' ')
    .toLowerCase();
  return words.every(word => haystack.includes(word));
}

/** 12345 → "12.3k", for token counts. */
export function formatTokens(tokens: number | null | undefined): string {
  if (typeof tokens !== 'number' || !isFinite(tokens)) {
    return '?';
  }
  if (tokens >= 1_000_000) {
    return `${(tokens / 1_000_000).toFixed(1)}M`;
  }
  if (tokens >= 1000) {
    return `${(tokens / 1000).toFixed(1)}k`;
  }
  return String(Math.round(tokens));
}

/** Pretty JSON for a tool input; plain text stays as it is. */
export function prettyValue(value: unknown): string {
  if (typeof value === 'string') {
    return value;
  }
  if (value === undefined) {
    return '';
  }
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** Create an element with a class and optional text, the way every view here builds DOM. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** The fewest and most characters a cut name keeps whole at its end. */
const TAIL_MIN = 8;
const TAIL_MAX = 16;

/**
 * How to cut each long name in the middle: `[head, tail]`, where only the head
 * may lose its end to an ellipsis and the tail always shows. Names that share a
 * long prefix with another name (`report-2024-q1`, `report-2024-q2`) keep whole
 * the part where they differ, as far as `TAIL_MAX` allows; other names keep
 * their last `TAIL_MAX` characters. A name too short to need a cut has no tail.
 */
export function nameCuts(
  names: readonly string[]
): Map<string, [string, string]> {
  const sorted = Array.from(new Set(names)).sort();
  const cuts = new Map<string, [string, string]>();
  sorted.forEach((name, i) => {
    // The longest prefix shared with any other name is shared with a sorted neighbour.
    const shared = Math.max(
      i > 0 ? commonPrefix(name, sorted[i - 1]) : 0,
      i + 1 < sorted.length ? commonPrefix(name, sorted[i + 1]) : 0
    );
    const differs = name.length - shared;
    const tail = Math.min(Math.max(differs, TAIL_MIN), TAIL_MAX);
    cuts.set(
      name,
      name.length <= tail + TAIL_MIN
        ? [name, '']
        : [name.slice(0, name.length - tail), name.slice(name.length - tail)]
    );
  });
  return cuts;
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) {
    i++;
  }
  return i;
}
