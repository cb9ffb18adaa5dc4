/**
 * Widget outputs that read well without their kernel.
 *
 * The kernel-side views (`%context`, `%memory`, ...) display an ipywidget and, in
 * the same output bundle, a `text/html` and `text/plain` copy of what it showed
 * plus a small marker of type VIEW_MIME. JupyterLab would pick the widget view
 * (rank -10) for a trusted output, and when the notebook is reopened with a new
 * kernel and no saved widget state its model is gone: "Error displaying widget:
 * model not found". The renderer here ranks ahead of the widget view: it shows
 * the static copy at once and swaps in the live widget only when the widget
 * manager of the notebook actually produces a view for the model. So the live
 * layer is used while the kernel that made it runs, and the static copy
 * otherwise (reopened, restarted, untrusted, or no widget manager at all).
 *
 * The renderer needs the notebook's own render-mime registry (where
 * jupyterlab-manager registers the widget renderer with that notebook's widget
 * manager), so this is a plugin that binds a factory to each notebook's
 * registry, not a `mimeExtension`.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

export const VIEW_MIME = 'application/vnd.jupyter-memory.view+json';
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
// The static copies in the bundle, richest first.
const STATIC_MIMES = ['text/html', 'text/plain'];
// Ahead of the widget view (-10), which is ahead of every standard renderer.
const RANK = -20;

/**
 * Shows an output's static copy, and its live widget when one can be made.
 */
export class ViewRenderer extends Panel implements IRenderMime.IRenderer {
  constructor(registry: IRenderMimeRegistry) {
    super();
    this._registry = registry;
    this.addClass('jp-MemoryView');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._stopWatching();
    for (const child of [...this.widgets]) {
      child.dispose();
    }
    const staticType = STATIC_MIMES.find(type => type in model.data);
    let fallback: IRenderMime.IRenderer | null = null;
    if (staticType) {
      // The standard renderer, so an untrusted output is sanitized as usual.
      fallback = this._registry.createRenderer(staticType);
      this.addWidget(fallback);
      await fallback.renderModel(model);
    }
    const view = model.data[WIDGET_MIME] as { model_id?: string } | undefined;
    // A widget view is never shown for an untrusted output (its renderer is not safe).
    if (!model.trusted || !view || !view.model_id || !this._registry.getFactory(WIDGET_MIME)) {
      this.toggleClass('jp-MemoryView-static', true);
      return;
    }
    const live = this._registry.createRenderer(WIDGET_MIME);
    live.hide();
    this.addWidget(live);
    this._watchLive(live as Widget, fallback);
    // The widget renderer reports a missing model as text in its own node and
    // resolves; it only adds a child widget once the model's view exists.
    void live.renderModel(model);
  }

  dispose(): void {
    this._stopWatching();
    super.dispose();
  }

  /** True while the live widget is what is shown (for tests and styling). */
  get isLive(): boolean {
    return this.hasClass('jp-MemoryView-live');
  }

  private _watchLive(live: Widget, fallback: Widget | null): void {
    const update = () => {
      const hasView = live instanceof Panel && live.widgets.length > 0 && !live.isDisposed;
      if (hasView) {
        live.show();
        fallback?.hide();
      } else {
        // No view (yet, or any more: the widget was closed): the static copy.
        live.hide();
        fallback?.show();
      }
      this.toggleClass('jp-MemoryView-live', hasView);
      this.toggleClass('jp-MemoryView-static', !hasView);
    };
    this._observer = new MutationObserver(update);
    this._observer.observe(live.node, { childList: true });
    update();
  }

  private _stopWatching(): void {
    this._observer?.disconnect();
    this._observer = null;
  }

  private _registry: IRenderMimeRegistry;
  private _observer: MutationObserver | null = null;
}

/** Register (or re-register) the view renderer on `registry`, bound to it. */
export function bindViewRenderer(registry: IRenderMimeRegistry): void {
  registry.removeMimeType(VIEW_MIME);
  registry.addFactory(
    {
      safe: true,
      mimeTypes: [VIEW_MIME],
      createRenderer: () => new ViewRenderer(registry)
    },
    RANK
  );
}

export const viewPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-memory:widget-fallback',
  description: 'Shows the static copy of a jupyter-memory widget output when its model is gone.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    tracker: INotebookTracker | null
  ) => {
    // Everywhere: the static copy (no widget manager is bound to the global registry).
    bindViewRenderer(rendermime);
    if (tracker) {
      // Each notebook's registry is a clone that jupyterlab-manager gives the
      // notebook's widget manager; bind ours to it so live widgets can show.
      tracker.forEach(panel => bindViewRenderer(panel.content.rendermime));
      tracker.widgetAdded.connect((_, panel) => bindViewRenderer(panel.content.rendermime));
    }
  }
};
