/**
 * The MIME renderer extension for agent turn records.
 *
 * Registered as a `mimeExtension` (see package.json), so the record renders in
 * any output area, including a saved notebook opened with no kernel. It is
 * marked safe: it writes text nodes only, and the markdown answer is rendered
 * to HTML, cleaned (safe.ts: no script, no image loaded, links checked) and
 * sanitized again by JupyterLab, so untrusted notebooks show it too.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { TURN_MIME, TurnRenderer } from './turn';

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [TURN_MIME],
  createRenderer: options => new TurnRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'jupyter-memory:turn-renderer',
  description:
    'Renders jupyter-memory agent turns: answer, tool calls, recall and context.',
  rendererFactory,
  // Ahead of the markdown/html/plain fallbacks that ride in the same bundle.
  rank: 10,
  dataType: 'json'
};

export default extension;
