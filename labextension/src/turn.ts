/**
 * The view of one agent turn (`application/vnd.jupyter-memory.turn+json`).
 *
 * A saved notebook carries the whole record of each turn, so this renders it
 * with no kernel running: the answer, every tool call folded with its input
 * and result, the memories recall considered with its decision for each, and
 * a bar showing how the context window was spent, and the model requests
 * (rebuilt from the record's content-addressed parts when this output holds
 * them all; otherwise it says which parts an earlier output holds). The
 * record's type is generated from its JSON Schema (turnrecord.ts); every key
 * may still be missing (older or partial records) and unknown keys are ignored.
 */
import { removeMath, renderHTML, replaceMath } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { ageText, el, formatTokens, localTime, prettyValue } from './format';
import { CATEGORIES, UNKNOWN_CLASS } from './palette';
import { classToken, cleanHtml } from './safe';
import type { TurnRecord } from './turnrecord';
import {
  callNumbers,
  readableRecord,
  rememberParts,
  requestText,
  requestViews
} from './turnrequests';
import { notebookTurns, requestCommand, sameTurn } from './turnsource';

export const TURN_MIME = 'application/vnd.jupyter-memory.turn+json';

type Json = Record<string, any>;
/** A record as read from a notebook: the schema's shape, any part of it missing. */
type SavedRecord = Partial<TurnRecord> & Json;

function asObject(value: unknown): Json {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Json)
    : {};
}

function asArray(value: unknown): Json[] {
  return Array.isArray(value) ? value.map(asObject) : [];
}

function asText(value: unknown): string {
  return typeof value === 'string'
    ? value
    : value === undefined || value === null
      ? ''
      : String(value);
}

function asNumber(value: unknown): number | null {
  return typeof value === 'number' && isFinite(value) ? value : null;
}

/** Free space and the autocompact buffer: drawn after what the request holds. */
const BAR_TAIL = ['free', 'autocompact buffer'];

/** A category's colour class and tag (palette.ts, generated from the Python palette). */
export function categoryColour(name: string): {
  className: string;
  tag: string;
} {
  const known = CATEGORIES.find(c => c.name === name);
  return known
    ? { className: known.className, tag: known.tag }
    : { className: UNKNOWN_CLASS, tag: '?' };
}

/** The bar's order: used categories in the palette's order (unknown ones after
 * them), then free space, then the autocompact buffer. */
export function barOrder<T extends { name?: unknown }>(categories: T[]): T[] {
  const rank = (c: T): number => {
    const name = typeof c.name === 'string' ? c.name : '';
    const tail = BAR_TAIL.indexOf(name);
    if (tail >= 0) {
      return 1000 + tail;
    }
    const known = CATEGORIES.findIndex(k => k.name === name);
    return known >= 0 ? known : 500;
  };
  return categories
    .map((c, i) => [c, i] as [T, number])
    .sort((a, b) => rank(a[0]) - rank(b[0]) || a[1] - b[1])
    .map(([c]) => c);
}

/** Text of a tool result, which may be a string or a list of content blocks. */
export function resultText(result: unknown): string {
  if (Array.isArray(result)) {
    return result
      .map(block => {
        const b = asObject(block);
        return b.type === 'text' ? asText(b.text) : prettyValue(block);
      })
      .join('\n');
  }
  return prettyValue(result);
}

/** Renders one turn record into a host element. */
export class TurnRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._options = options;
    this.addClass('jp-MemoryTurn');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const saved: SavedRecord = asObject(model.data[TURN_MIME]);
    // A part is kept once per session, in the first output that needed it: read
    // this notebook's earlier outputs for them, whatever this page has rendered.
    const notebook = notebookTurns(saved);
    let position: number | null = null;
    if (notebook) {
      notebook.records.forEach(other => rememberParts(other));
      const index = notebook.records.findIndex(other => sameTurn(other, saved));
      position = index >= 0 ? index + 1 : null;
    }
    // Long texts are parts kept once per notebook (record version 3).
    const record: SavedRecord = readableRecord(saved);
    this.node.textContent = '';
    this.node.append(this._header(record));
    const answer = el('div', 'jp-MemoryTurn-answer');
    this.node.append(answer);
    await this._renderAnswer(answer, asText(record.answer));
    const sections = [
      this._toolCalls(asArray(record.tool_calls)),
      this._delegations(asArray(record.delegations)),
      this._recall(asObject(record.recall)),
      this._context(asObject(record.context)),
      this._written(asArray(record.memories_written)),
      this._events(asArray(record.events)),
      this._requests(
        saved,
        position ?? asNumber(saved.turn) ?? '?',
        notebook?.path ?? null
      )
    ];
    for (const section of sections) {
      if (section) {
        this.node.append(section);
      }
    }
  }

  private _header(record: SavedRecord): HTMLElement {
    const header = el('div', 'jp-MemoryTurn-header');
    const bits: string[] = [];
    if (asNumber(record.turn) !== null) {
      bits.push(`Turn ${record.turn}`);
    }
    if (record.model) {
      bits.push(asText(record.model));
    }
    const usage = asObject(record.usage);
    const input = asNumber(usage.input_tokens);
    const output = asNumber(usage.output_tokens);
    if (input !== null || output !== null) {
      // input_tokens counts only the uncached part: a request served from the
      // cache reports 0, so the size is the sum of the three.
      const read = asNumber(usage.cache_read_input_tokens) ?? 0;
      const written = asNumber(usage.cache_creation_input_tokens) ?? 0;
      const total = (input ?? 0) + read + written;
      // The footer of the static copy says so too: numbers from the local server
      // are made up, not what a model would bill.
      const simulated = asArray(record.cost).some(
        row => row.kind === 'main' && row.simulated
      );
      bits.push(
        `${formatTokens(total)} in (${formatTokens(input ?? 0)} uncached · ` +
          `${formatTokens(read)} cache read · ${formatTokens(written)} cache write) · ` +
          `${formatTokens(output ?? 0)} out` +
          (simulated ? ' (simulated: the local server)' : '')
      );
    }
    if (record.ended || record.started) {
      bits.push(localTime(asText(record.ended || record.started)));
    }
    header.textContent = bits.length ? bits.join(' · ') : 'Agent turn';
    const status = asText(record.status);
    if (status && status !== 'ok') {
      // ok | max_tokens | max_turns | interrupted | error: say when a turn did not finish.
      header.append(
        el('span', 'jp-MemoryTurn-status', status.replace(/_/g, ' '))
      );
    }
    if (record.prompt) {
      const prompt = el('div', 'jp-MemoryTurn-prompt');
      prompt.append(
        el('span', 'jp-MemoryTurn-label', 'Prompt'),
        el('span', '', asText(record.prompt))
      );
      const wrap = el('div', 'jp-MemoryTurn-top');
      wrap.append(header, prompt);
      return wrap;
    }
    return header;
  }

  private async _renderAnswer(
    host: HTMLElement,
    source: string
  ): Promise<void> {
    if (!source) {
      host.append(
        el('p', 'jp-MemoryTurn-empty', 'No answer was recorded for this turn.')
      );
      return;
    }
    const options = this._options;
    if (!options.markdownParser) {
      host.append(el('pre', 'jp-MemoryTurn-plain', source));
      return;
    }
    host.classList.add('jp-RenderedMarkdown', 'jp-RenderedHTMLCommon');
    // As renderMarkdown does (maths kept away from the markdown parser), then our
    // cleaning before anything reaches the page: the answer is model text and a
    // saved record is a file anyone can write. Raw HTML in it is dropped or made
    // inert, links are checked, images become text (never loaded).
    const parts = removeMath(source);
    const html = replaceMath(
      await options.markdownParser.render(parts['text']),
      parts['math']
    );
    await renderHTML({
      host,
      source: cleanHtml(html),
      // And JupyterLab's own sanitizer after ours.
      trusted: false,
      sanitizer: options.sanitizer,
      resolver: options.resolver,
      linkHandler: options.linkHandler,
      shouldTypeset: this.isAttached,
      latexTypesetter: options.latexTypesetter,
      translator: options.translator
    });
  }

  private _details(
    summary: string,
    className: string
  ): [HTMLDetailsElement, HTMLElement] {
    const details = el('details', `jp-MemoryTurn-section ${className}`);
    details.append(el('summary', 'jp-MemoryTurn-summary', summary));
    const body = el('div', 'jp-MemoryTurn-body');
    details.append(body);
    return [details, body];
  }

  private _toolCalls(calls: Json[]): HTMLElement | null {
    if (calls.length === 0) {
      return null;
    }
    const errors = calls.filter(call => call.is_error === true).length;
    const [details, body] = this._details(
      `Tool calls (${calls.length}${errors ? `, ${errors} failed` : ''})`,
      'jp-MemoryTurn-tools'
    );
    for (const call of calls) {
      const name = asText(call.name) || 'tool';
      const failed = call.is_error === true;
      const [one, inner] = this._details(
        `${name}${failed ? ' — error' : ''}`,
        `jp-MemoryTurn-tool${failed ? ' jp-mod-error' : ''}`
      );
      inner.append(
        el('div', 'jp-MemoryTurn-label', 'Input'),
        el('pre', 'jp-MemoryTurn-pre', prettyValue(call.input ?? {})),
        el('div', 'jp-MemoryTurn-label', 'Result'),
        el(
          'pre',
          'jp-MemoryTurn-pre',
          'result' in call ? resultText(call.result) : '(no result)'
        )
      );
      body.append(one);
    }
    return details;
  }

  /** Each task the main agent handed to a defined agent (the Agent tool): the
   * task, the agent's own tool calls, what it saved in its memory, its answer (as
   * text: it is model output) and where its sidechain log is. */
  private _delegations(runs: Json[]): HTMLElement | null {
    if (runs.length === 0) {
      return null;
    }
    const [details, body] = this._details(
      `Delegated (${runs.length})`,
      'jp-MemoryTurn-delegations'
    );
    for (const run of runs) {
      const status = asText(run.status) || '?';
      const task = asText(run.description);
      const [one, inner] = this._details(
        `${asText(run.agent) || 'agent'}${task ? `: ${task}` : ''} — ` +
          status.replace(/_/g, ' '),
        `jp-MemoryTurn-delegation jp-mod-${classToken(status)}`
      );
      inner.append(
        el('div', 'jp-MemoryTurn-label', 'Task'),
        el('pre', 'jp-MemoryTurn-pre', asText(run.prompt))
      );
      if (run.model) {
        inner.append(el('div', '', `Model: ${asText(run.model)}`));
      }
      const calls = this._toolCalls(asArray(run.tool_calls));
      if (calls) {
        inner.append(calls);
      }
      const written = asArray(run.memories_written).map(w => asText(w.file));
      if (written.length) {
        inner.append(
          el('div', '', `Saved in its own memory: ${written.join(', ')}`)
        );
      }
      inner.append(
        el('div', 'jp-MemoryTurn-label', 'Its answer'),
        el(
          'pre',
          'jp-MemoryTurn-pre',
          asText(run.answer) || asText(run.error) || '(no answer)'
        )
      );
      if (run.transcript) {
        inner.append(el('div', '', `Its messages: ${asText(run.transcript)}`));
      }
      body.append(one);
    }
    return details;
  }

  private _recall(recall: Json): HTMLElement | null {
    const decisions = asArray(recall.decisions);
    if (decisions.length === 0 && !recall.mode) {
      return null;
    }
    const injected = decisions.filter(d => d.decision === 'injected').length;
    const mode = recall.mode ? `, ${asText(recall.mode)} mode` : '';
    // In index mode "injected" sends a pointer line, not the memory: say so.
    const what =
      recall.mode === 'index'
        ? `pointer lines of ${injected} of ${decisions.length} sent`
        : `${injected} of ${decisions.length} injected`;
    const [details, body] = this._details(
      `Recalled memories (${what}${mode})`,
      'jp-MemoryTurn-recall'
    );
    if (decisions.length === 0) {
      body.append(el('p', 'jp-MemoryTurn-empty', 'No memory was considered.'));
      return details;
    }
    const table = el('table', 'jp-MemoryTurn-table');
    const head = el('tr');
    for (const title of ['Memory', 'Decision', 'Why', 'Age', 'Bytes']) {
      const th = el('th', '', title);
      th.scope = 'col';
      head.append(th);
    }
    table.append(el('thead'), el('tbody'));
    table.tHead!.append(head);
    for (const decision of decisions) {
      const row = el(
        'tr',
        `jp-MemoryTurn-decision jp-mod-${classToken(asText(decision.decision))}`
      );
      const age = asNumber(decision.age_days);
      const bytes = asNumber(decision.bytes);
      row.append(
        el('td', 'jp-MemoryTurn-file', asText(decision.file)),
        el(
          'td',
          'jp-MemoryTurn-verdict',
          asText(decision.decision).replace(/_/g, ' ')
        ),
        el(
          'td',
          '',
          // The decision's own path first: a reason may name another ("… path C").
          [
            decision.path ? `path ${asText(decision.path)}:` : '',
            asText(decision.reason)
          ]
            .filter(Boolean)
            .join(' ')
        ),
        el('td', '', ageText(age)),
        el('td', '', bytes === null ? '' : String(bytes))
      );
      table.tBodies[0].append(row);
    }
    body.append(table);
    return details;
  }

  /** The context bar as `%context` draws it: the used categories, then free
   * space, then the autocompact buffer (the window's end from the autocompact
   * level on), each category in its one colour (palette.ts). */
  private _context(context: Json): HTMLElement | null {
    const categories = barOrder(
      asArray(context.categories).filter(c => (asNumber(c.tokens) ?? 0) > 0)
    );
    const windowSize = asNumber(context.window);
    if (categories.length === 0 || !windowSize) {
      return null;
    }
    const used =
      asNumber(context.used) ??
      categories
        .filter(c => !BAR_TAIL.includes(asText(c.name)))
        .reduce((n, c) => n + (asNumber(c.tokens) ?? 0), 0);
    const scale = Math.max(
      windowSize,
      categories.reduce((n, c) => n + (asNumber(c.tokens) ?? 0), 0)
    );
    const section = el('div', 'jp-MemoryTurn-section jp-MemoryTurn-context');
    const percent = Math.min(100, (100 * used) / windowSize);
    section.append(
      el(
        'div',
        'jp-MemoryTurn-label',
        `Context: ${formatTokens(used)} of ${formatTokens(windowSize)} tokens (${percent.toFixed(1)}%)`
      )
    );
    const bar = el('div', 'jp-MemoryTurn-bar jm-bar-track');
    bar.setAttribute('role', 'img');
    bar.setAttribute(
      'aria-label',
      'Context breakdown: ' +
        categories
          .map(
            c => `${asText(c.name)} ${formatTokens(asNumber(c.tokens))} tokens`
          )
          .join(', ') +
        `; ${formatTokens(windowSize)} token window`
    );
    const legend = el('ul', 'jp-MemoryTurn-legend');
    for (const category of categories) {
      const tokens = asNumber(category.tokens) ?? 0;
      const name = asText(category.name) || 'other';
      const colour = categoryColour(name);
      const segment = el('span', `jp-MemoryTurn-segment ${colour.className}`);
      segment.style.width = `${Math.max(0.3, (100 * tokens) / scale)}%`;
      segment.title = `${name}: ${tokens} tokens`;
      bar.append(segment);
      const item = el('li', 'jp-MemoryTurn-legendItem');
      const swatch = el('span', 'jp-MemoryTurn-swatchTrack jm-bar-track');
      swatch.append(
        el('span', `jp-MemoryTurn-swatch ${colour.className}`, colour.tag)
      );
      item.append(swatch, el('span', '', `${name} ${formatTokens(tokens)}`));
      legend.append(item);
    }
    const thresholds = asObject(context.thresholds);
    const autocompact = asNumber(thresholds.autocompact);
    if (autocompact !== null && autocompact < windowSize) {
      const marker = el('span', 'jp-MemoryTurn-marker');
      marker.style.left = `${(100 * autocompact) / scale}%`;
      marker.title = `Auto-compaction at ${autocompact} tokens`;
      // First, so the last span of the bar is its last segment (no gap after it).
      bar.prepend(marker);
    }
    section.append(bar, legend);
    return section;
  }

  private _written(written: Json[]): HTMLElement | null {
    if (written.length === 0) {
      return null;
    }
    const section = el('div', 'jp-MemoryTurn-section jp-MemoryTurn-written');
    section.append(el('div', 'jp-MemoryTurn-label', 'Memories written'));
    const list = el('ul', 'jp-MemoryTurn-list');
    for (const item of written) {
      list.append(
        el(
          'li',
          '',
          `${asText(item.file)}${item.by ? ` (by ${asText(item.by)})` : ''}`
        )
      );
    }
    section.append(list);
    return section;
  }

  private _events(events: Json[]): HTMLElement | null {
    if (events.length === 0) {
      return null;
    }
    const section = el('div', 'jp-MemoryTurn-section jp-MemoryTurn-events');
    section.append(el('div', 'jp-MemoryTurn-label', 'Events'));
    const list = el('ul', 'jp-MemoryTurn-list');
    for (const event of events) {
      const kind = asText(event.kind) || 'note';
      list.append(
        el(
          'li',
          `jp-MemoryTurn-event jp-mod-${classToken(kind)}`,
          `${kind}: ${asText(event.text)}`
        )
      );
    }
    section.append(list);
    return section;
  }

  /** The turn's requests, each as readable text, and the command that prints
   * it whole: `turn` counts the notebook's agent turns from 1, calls count the
   * turn's model calls from 1 (as `jupyter-memory request` does). */
  private _requests(
    record: SavedRecord,
    turn: number | string,
    path: string | null
  ): HTMLElement | null {
    const views = requestViews(record);
    if (views.length === 0) {
      return null;
    }
    const numbers = callNumbers(record);
    const [details, body] = this._details(
      `Model requests (${views.length})`,
      'jp-MemoryTurn-requests'
    );
    views.forEach((view, i) => {
      const call = numbers[i] || i + 1;
      const round = view.round === null ? '' : ` · round ${view.round + 1}`;
      const [one, inner] = this._details(
        `Call ${call}${round} · ${view.digest.slice(0, 19)}…`,
        'jp-MemoryTurn-request'
      );
      if (view.body) {
        inner.append(el('pre', 'jp-MemoryTurn-pre', requestText(view.body)));
      } else {
        const parts = view.missing.join(', ');
        const verb = view.missing.length > 1 ? 'parts live' : 'part lives';
        inner.append(
          el(
            'p',
            'jp-MemoryTurn-empty',
            `Its ${parts} ${verb} in an earlier output of this notebook that ` +
              'is not open here (a session stores each part once).'
          )
        );
      }
      const command = el('div', 'jp-MemoryTurn-command');
      command.append(
        el('span', '', 'The whole request: '),
        el('code', '', requestCommand(path, turn, call))
      );
      inner.append(command);
      body.append(one);
    });
    return details;
  }

  private _options: IRenderMime.IRendererOptions;
}
