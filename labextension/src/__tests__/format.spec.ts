/**
 * @jest-environment jsdom
 */
import {
  ageText,
  el,
  formatTokens,
  groupByType,
  matchesQuery,
  nameCuts,
  prettyValue,
  typeTitle
} from '../format';
import type { IMemory } from '../api';

const memory = (file: string, extra: Partial<IMemory> = {}): IMemory => ({
  file,
  ...extra
});

describe('format', () => {
  it('titles the known types and keeps others as they are', () => {
    expect(typeTitle('feedback')).toBe('Feedback');
    expect(typeTitle('other')).toBe('Untyped');
    expect(typeTitle('mine')).toBe('mine');
  });

  it('says ages the way the kernel does', () => {
    expect(ageText(0)).toBe('today');
    expect(ageText(-2)).toBe('today');
    expect(ageText(1)).toBe('yesterday');
    expect(ageText(3.7)).toBe('3 days ago');
    expect(ageText(null)).toBe('');
    expect(ageText(undefined)).toBe('');
    expect(ageText(NaN)).toBe('');
  });

  it('groups known types first in their order, then untyped', () => {
    const groups = groupByType([
      memory('a.md', { type: 'reference' }),
      memory('b.md', { type: 'user' }),
      memory('c.md', { type: 'weird' }),
      memory('d.md'),
      memory('e.md', { type: 'user' })
    ]);
    expect(groups.map(([type, list]) => [type, list.map(m => m.file)])).toEqual(
      [
        ['user', ['b.md', 'e.md']],
        ['reference', ['a.md']],
        ['other', ['c.md', 'd.md']]
      ]
    );
  });

  it('matches every word of a query, case-insensitively', () => {
    const m = memory('project_cents.md', {
      name: 'revenue-in-cents',
      description: 'Revenue column is in cents',
      type: 'project'
    });
    expect(matchesQuery(m, '')).toBe(true);
    expect(matchesQuery(m, '  REVENUE   project ')).toBe(true);
    expect(matchesQuery(m, 'revenue dollars')).toBe(false);
    expect(matchesQuery(memory('x.md'), 'x.md')).toBe(true);
  });

  it('formats token counts', () => {
    expect(formatTokens(999)).toBe('999');
    expect(formatTokens(12345)).toBe('12.3k');
    expect(formatTokens(1_500_000)).toBe('1.5M');
    expect(formatTokens(null)).toBe('?');
    expect(formatTokens(Infinity)).toBe('?');
  });

  it('pretty-prints values and leaves text alone', () => {
    expect(prettyValue('a\nb')).toBe('a\nb');
    expect(prettyValue(undefined)).toBe('');
    expect(prettyValue({ a: 1 })).toBe('{\n  "a": 1\n}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(prettyValue(cyclic)).toBe('[object Object]');
  });

  it('builds elements with a class and text', () => {
    const node = el('span', 'jp-X', 'hi');
    expect(node.tagName).toBe('SPAN');
    expect(node.className).toBe('jp-X');
    expect(node.textContent).toBe('hi');
    expect(el('div').className).toBe('');
  });

  it('cuts long names in the middle, keeping whole where similar names differ', () => {
    const cuts = nameCuts([
      'quarterly-revenue-report-region-north',
      'quarterly-revenue-report-region-south',
      'how-the-nightly-warehouse-load-is-scheduled-and-retried',
      'short-name',
      'ab'
    ]);
    // The two reports differ in their last five letters: those stay whole.
    expect(cuts.get('quarterly-revenue-report-region-north')).toEqual([
      'quarterly-revenue-report-regi',
      'on-north'
    ]);
    expect(cuts.get('quarterly-revenue-report-region-south')![1]).toBe(
      'on-south'
    );
    // A name like no other keeps its last sixteen characters.
    const [head, tail] = cuts.get(
      'how-the-nightly-warehouse-load-is-scheduled-and-retried'
    )!;
    expect(tail).toBe('eduled-and-retried'.slice(-16));
    expect(head + tail).toBe(
      'how-the-nightly-warehouse-load-is-scheduled-and-retried'
    );
    // Names too short to need a cut are not cut.
    expect(cuts.get('short-name')).toEqual(['short-name', '']);
    expect(cuts.get('ab')).toEqual(['ab', '']);
  });

  it('keeps from where a shared prefix ends, up to sixteen characters', () => {
    const a = 'customer-churn-model-v2-features-2024';
    const b = 'customer-churn-model-v2-features-2025-draft';
    const cuts = nameCuts([a, b, a]);
    expect(cuts.size).toBe(2);
    expect(cuts.get(a)![1]).toBe('features-2024'.slice(-8));
    expect(cuts.get(b)![1]).toBe('25-draft');
    expect(cuts.get(b)![0] + cuts.get(b)![1]).toBe(b);
  });
});
