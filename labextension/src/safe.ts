/**
 * Text others wrote, made safe to put on the page: what the turn renderer and
 * the widget fallback use for HTML they did not make themselves.
 *
 * A saved notebook is a file anyone can write, so the records and static
 * copies in its outputs may hold any HTML. The rules are the kernel's
 * (jupyter_memory/widgets/safe.py): no script, no element that loads or
 * embeds anything, links only to http, https and mailto URLs or to relative
 * paths inside the notebook's folder, and an image shown as its alt text and
 * URL, never loaded (a remote image is the classic way to send text away).
 *
 * `cleanHtml` parses with `DOMParser`, whose document is inert (no script
 * runs, no image loads), keeps an allowlist of elements, attributes, classes
 * and style properties, and returns the cleaned markup. Callers still render
 * it untrusted, so JupyterLab's own sanitizer runs after ours.
 */

/** URL schemes a link may keep. */
export const SAFE_SCHEMES = ['http', 'https', 'mailto'];
/** Shown after the text of a link whose target was removed. */
export const LINK_REMOVED = '(link removed)';
/** Shown for an image: its URL follows when a link could have it. */
export const IMAGE_NOT_LOADED = 'image not loaded';

const SHOWN_URL_CHARS = 300;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** `url` when a link may point there, else null (the kernel's `link_target`). */
export function linkTarget(url: string): string | null {
  url = url.replace(/^[ \t\r\n\f]+|[ \t\r\n\f]+$/g, '');
  if (!url || CONTROL.test(url) || url.includes('\\')) {
    return null;
  }
  const scheme = SCHEME.exec(url);
  if (scheme) {
    return SAFE_SCHEMES.includes(scheme[1].toLowerCase()) ? url : null;
  }
  if (url.startsWith('/')) {
    return null;
  }
  let path = url.split(/[?#]/, 1)[0];
  for (let i = 0; i < 3; i++) {
    try {
      path = decodeURIComponent(path);
    } catch {
      return null; // a malformed escape: no way to tell where it leads
    }
  }
  if (path.includes('\\') || path.split('/').includes('..')) {
    return null;
  }
  return SCHEME.test(path) ? null : url;
}

function shownUrl(url: string): string {
  url = url.split(/\s+/).join(' ');
  return url.length > SHOWN_URL_CHARS
    ? url.slice(0, SHOWN_URL_CHARS - 1) + '…'
    : url;
}

/** The words that stand for an image with this `src`. */
export function imageNote(src: string): string {
  const target = linkTarget(src);
  return target ? `${IMAGE_NOT_LOADED}: ${shownUrl(target)}` : IMAGE_NOT_LOADED;
}

/** A class name from a record (`jp-mod-${x}`): letters, digits, `-` and `_`. */
export function classToken(value: string): string {
  return value.replace(/[^A-Za-z0-9_-]/g, '') || 'unknown';
}

// Elements kept as they are (their attributes filtered).
const KEEP = new Set([
  'a',
  'abbr',
  'b',
  'blockquote',
  'br',
  'caption',
  'cite',
  'code',
  'col',
  'colgroup',
  'dd',
  'del',
  'details',
  'dfn',
  'div',
  'dl',
  'dt',
  'em',
  'figcaption',
  'figure',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'i',
  'ins',
  'kbd',
  'li',
  'mark',
  'ol',
  'p',
  'pre',
  'q',
  's',
  'samp',
  'small',
  'span',
  'strike',
  'strong',
  'sub',
  'summary',
  'sup',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'tt',
  'u',
  'ul',
  'var',
  'wbr'
]);
// Elements dropped with everything inside: code and style, the document's head,
// and elements that load or submit and hold no text. Every other element not
// kept above (svg, math, iframe, form, button, object, video, ...) is unwrapped:
// its text stays, as sanitizers do, so an answer that says "<svg>" in prose
// does not lose the rest of itself.
const DROP = new Set([
  'base',
  'embed',
  'head',
  'input',
  'link',
  'meta',
  'param',
  'script',
  'source',
  'style',
  'template',
  'title',
  'track'
]);
const GLOBAL_ATTRS = new Set([
  'class',
  'title',
  'dir',
  'lang',
  'role',
  'style',
  'align',
  'aria-label',
  'aria-hidden',
  'aria-valuemin',
  'aria-valuemax',
  'aria-valuenow'
]);
const TAG_ATTRS: Record<string, string[]> = {
  a: ['href'],
  td: ['colspan', 'rowspan'],
  th: ['colspan', 'rowspan', 'scope'],
  ol: ['start', 'type'],
  li: ['value'],
  details: ['open']
};
// Classes a renderer of ours or JupyterLab's markdown parser writes.
const CLASS =
  /^(?:(?:language|lang|tok|cm|hljs|jm|jupyter-memory)(?:-[\w-]*)?|ͼ\w+)$/;
const STYLE_PROPERTIES = new Set([
  'background',
  'background-color',
  'background-image',
  'background-size',
  'border',
  'border-bottom',
  'border-collapse',
  'border-color',
  'border-left',
  'border-radius',
  'border-right',
  'border-spacing',
  'border-style',
  'border-top',
  'border-width',
  'bottom',
  'box-sizing',
  'color',
  'display',
  'flex',
  'flex-direction',
  'flex-wrap',
  'font-family',
  'font-size',
  'font-style',
  'font-weight',
  'gap',
  'height',
  'left',
  'line-height',
  'list-style',
  'margin',
  'margin-bottom',
  'margin-left',
  'margin-right',
  'margin-top',
  'max-height',
  'max-width',
  'min-height',
  'min-width',
  'opacity',
  'overflow',
  'overflow-x',
  'overflow-y',
  'padding',
  'padding-bottom',
  'padding-left',
  'padding-right',
  'padding-top',
  'position',
  'right',
  'text-align',
  'text-decoration',
  'top',
  'vertical-align',
  'white-space',
  'width',
  'word-break'
]);
// CSS functions that compute a value; any other (url, image-set, expression,
// element, attr, ...) may load something or run something.
const STYLE_FUNCTIONS = new Set([
  'var',
  'rgb',
  'rgba',
  'hsl',
  'hsla',
  'calc',
  'min',
  'max',
  'clamp',
  'linear-gradient',
  'repeating-linear-gradient',
  'radial-gradient',
  'repeating-radial-gradient'
]);
const STYLE_VALUE = /^[-\w\s#%.,()/+*]*$/;

/** The declarations of a `style` attribute that can neither load nor escape. */
export function cleanStyle(style: string): string {
  const kept: string[] = [];
  for (const declaration of style.split(';')) {
    const colon = declaration.indexOf(':');
    if (colon < 0) {
      continue;
    }
    const property = declaration.slice(0, colon).trim().toLowerCase();
    const value = declaration.slice(colon + 1).trim();
    if (!STYLE_PROPERTIES.has(property) || !STYLE_VALUE.test(value)) {
      continue;
    }
    const functions = value.toLowerCase().match(/[a-z-]+(?=\()/g) ?? [];
    if (!functions.every(name => STYLE_FUNCTIONS.has(name))) {
      continue;
    }
    if (
      property === 'position' &&
      !/^(absolute|relative|static)$/i.test(value)
    ) {
      continue;
    }
    kept.push(`${property}:${value}`);
  }
  return kept.join(';');
}

function cleanAttributes(element: Element): void {
  const tag = element.tagName.toLowerCase();
  const allowed = TAG_ATTRS[tag] ?? [];
  for (const { name, value } of Array.from(element.attributes)) {
    let keep: string | null = null;
    if (!GLOBAL_ATTRS.has(name) && !allowed.includes(name)) {
      keep = null;
    } else if (name === 'class') {
      keep = value
        .split(/\s+/)
        .filter(token => CLASS.test(token))
        .join(' ');
    } else if (name === 'style') {
      keep = cleanStyle(value);
    } else if (name === 'href') {
      keep = linkTarget(value);
    } else {
      keep = value;
    }
    if (keep === null || (keep === '' && name !== 'open')) {
      element.removeAttribute(name);
    } else {
      element.setAttribute(name, keep);
    }
  }
}

function cleanChildren(parent: Node, doc: Document): void {
  for (const child of Array.from(parent.childNodes)) {
    if (child.nodeType === 3) {
      continue; // text
    }
    if (child.nodeType !== 1) {
      child.remove(); // comments, processing instructions, CDATA
      continue;
    }
    const element = child as Element;
    const tag = element.tagName.toLowerCase();
    if (DROP.has(tag)) {
      element.remove();
      continue;
    }
    if (tag === 'img' || tag === 'image') {
      const alt = (element.getAttribute('alt') ?? '').trim();
      const note = `(${imageNote(element.getAttribute('src') ?? '')})`;
      element.replaceWith(doc.createTextNode(alt ? `${alt} ${note}` : note));
      continue;
    }
    cleanChildren(element, doc);
    if (tag === 'a' && !linkTarget(element.getAttribute('href') ?? '')) {
      // The text stays, the target goes, and the person is told.
      const removed = doc.createElement('span');
      removed.className = 'jm-removed';
      removed.textContent = ` ${LINK_REMOVED}`;
      element.replaceWith(...Array.from(element.childNodes), removed);
      continue;
    }
    if (
      !KEEP.has(tag) ||
      element.namespaceURI !== 'http://www.w3.org/1999/xhtml'
    ) {
      element.replaceWith(...Array.from(element.childNodes)); // its text stays
      continue;
    }
    cleanAttributes(element);
  }
}

/**
 * `html` with only what cannot run, load or leave the page: kept elements and
 * attributes, checked links, images as text. Parsed inertly, never rendered.
 */
export function cleanHtml(html: string): string {
  // What the parser puts in <head> (meta, link, style, base, title) is left out.
  const doc = new DOMParser().parseFromString(html, 'text/html');
  cleanChildren(doc.body, doc);
  return doc.body.innerHTML;
}
