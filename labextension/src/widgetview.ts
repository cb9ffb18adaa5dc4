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
 * Before the live layer is made, the notebook's widget manager is asked whether
 * it holds the output's model (`widgetModelExists`): jupyterlab-manager's own
 * renderer logs "widget model not found" on the console for each output it
 * cannot draw, so a reopened notebook would log one error per view.
 *
 * The renderer needs the notebook's own render-mime registry (where
 * jupyterlab-manager registers the widget renderer with that notebook's widget
 * manager), so this is a plugin that binds a factory to each notebook's
 * registry, not a `mimeExtension`.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

import { cleanHtml } from './safe';

export const VIEW_MIME = 'application/vnd.jupyter-memory.view+json';
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
// The static copies in the bundle, richest first.
const STATIC_MIMES = ['text/html', 'text/plain'];
// Ahead of the widget view (-10), which is ahead of every standard renderer.
const RANK = -20;
// On a view whose widget model the notebook's manager does not hold (static for good).
const NO_MODEL_CLASS = 'jp-MemoryView-nomodel';

/**
 * Shows an output's static copy, and its live widget when one can be made.
 */
export class ViewRenderer extends Panel implements IRenderMime.IRenderer {
  constructor(registry: IRenderMimeRegistry) {
    super();
    this.registry = registry;
    this.addClass('jp-MemoryView');
  }

  /**
   * The registry the live widget renderer comes from. A renderer drawn before the
   * notebook's widget manager was ready is pointed at the notebook's registry and
   * its live layer made again (see `attachToNotebook`).
   */
  registry: IRenderMimeRegistry;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._model = model;
    this._stopWatching();
    for (const child of [...this.widgets]) {
      child.dispose();
    }
    this._fallback = null;
    this._live = null;
    const staticType = STATIC_MIMES.find(type => type in model.data);
    if (staticType) {
      // The standard renderer, so an untrusted output is sanitized as usual; the
      // HTML copy is cleaned first (safe.ts), as a saved notebook is a file anyone
      // can write: ours never holds script, images or links that leave the folder.
      const fallback = this.registry.createRenderer(staticType);
      this._fallback = fallback;
      this.addWidget(fallback);
      await fallback.renderModel(staticModel(model, staticType));
    }
    this.renderLive();
  }

  /**
   * Try the live widget again: it replaces the static copy once the notebook's
   * widget manager makes a view for the output's model.
   */
  renderLive(): void {
    const model = this._model;
    this._stopWatching();
    this._live?.dispose();
    this._live = null;
    this._fallback?.show();
    this.toggleClass('jp-MemoryView-live', false);
    this.toggleClass('jp-MemoryView-static', true);
    if (!model) {
      return;
    }
    const view = model.data[WIDGET_MIME] as { model_id?: string } | undefined;
    // A widget view is never shown for an untrusted output (its renderer is not safe).
    if (
      !model.trusted ||
      !view ||
      !view.model_id ||
      !this.registry.getFactory(WIDGET_MIME)
    ) {
      return;
    }
    const live = this.registry.createRenderer(
      WIDGET_MIME
    ) as IRenderMime.IRenderer;
    live.hide();
    this._live = live;
    this.toggleClass(NO_MODEL_CLASS, false);
    void this._showLiveIfModelExists(live, model, view.model_id);
  }

  dispose(): void {
    this._stopWatching();
    // A live layer still waiting for its answer is not a child yet.
    this._live?.dispose();
    this._live = null;
    super.dispose();
  }

  /** True while the live widget is what is shown (for tests and styling). */
  get isLive(): boolean {
    return this.hasClass('jp-MemoryView-live');
  }

  /**
   * Add the live layer once the widget manager says it holds the model; else keep
   * the static copy and mark this view `jp-MemoryView-nomodel`. A renderer made
   * before the notebook's manager exists waits here until `renderLive` replaces it.
   */
  private async _showLiveIfModelExists(
    live: IRenderMime.IRenderer,
    model: IRenderMime.IMimeModel,
    modelId: string
  ): Promise<void> {
    const exists = await widgetModelExists(live, modelId);
    if (this._live !== live || this.isDisposed) {
      return; // replaced or closed meanwhile
    }
    if (!exists) {
      live.dispose();
      this._live = null;
      this.toggleClass(NO_MODEL_CLASS, true);
      return;
    }
    this.addWidget(live);
    this._watchLive(live);
    // The widget renderer only adds a child widget once the model's view exists.
    void live.renderModel(model);
  }

  private _watchLive(live: Widget): void {
    const update = () => {
      const hasView =
        live instanceof Panel && live.widgets.length > 0 && !live.isDisposed;
      if (hasView) {
        live.show();
        this._fallback?.hide();
      } else {
        // No view (yet, or any more: the widget was closed): the static copy.
        live.hide();
        this._fallback?.show();
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

  private _model: IRenderMime.IMimeModel | null = null;
  private _fallback: Widget | null = null;
  private _live: Widget | null = null;
  private _observer: MutationObserver | null = null;
}

/** The widget manager's side of jupyterlab-manager's renderer (widgets 8). */
interface IWidgetManagerLike {
  has_model(modelId: string): boolean;
  restoredStatus: boolean;
  restored: {
    connect(slot: () => void): unknown;
    disconnect(slot: () => void): unknown;
  };
}

/**
 * Whether the widget manager behind a widget renderer holds model `modelId`
 * (from the running kernel, or restored from saved widget state).
 *
 * jupyterlab-manager keeps the manager in the renderer's `_manager` promise and
 * has no public getter for it; a renderer without one (another version) answers
 * true, so the live layer is tried as before. Waits for the manager to restore
 * the models it can, as its own renderer does.
 */
export async function widgetModelExists(
  renderer: IRenderMime.IRenderer,
  modelId: string
): Promise<boolean> {
  const pending = (
    renderer as unknown as {
      _manager?: { promise?: Promise<IWidgetManagerLike> };
    }
  )._manager?.promise;
  if (!pending) {
    return true;
  }
  const manager = await pending;
  if (!manager || typeof manager.has_model !== 'function') {
    return true;
  }
  if (!manager.restoredStatus) {
    await new Promise<void>(resolve => {
      const done = () => {
        manager.restored.disconnect(done);
        resolve();
      };
      manager.restored.connect(done);
    });
  }
  return manager.has_model(modelId);
}

/** The output's static copy of `type`, its HTML cleaned. */
export function staticModel(
  model: IRenderMime.IMimeModel,
  type: string
): IRenderMime.IMimeModel {
  if (type !== 'text/html') {
    return model;
  }
  const html = model.data[type];
  return new MimeModel({
    data: {
      [type]: cleanHtml(typeof html === 'string' ? html : String(html ?? ''))
    },
    metadata: model.metadata,
    trusted: model.trusted
  });
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

/** The view renderers in a notebook's outputs (each output child holds its renderer). */
function viewRenderersOf(panel: NotebookPanel): ViewRenderer[] {
  const found: ViewRenderer[] = [];
  for (const cell of panel.content.widgets) {
    // Code cells only (typed by shape: @jupyterlab/cells is not a dependency of ours).
    const outputArea = (
      cell as unknown as { outputArea?: { widgets: readonly Widget[] } }
    ).outputArea;
    if (cell.model.type !== 'code' || !outputArea) {
      continue;
    }
    for (const child of outputArea.widgets) {
      for (const widget of Array.from(child.children())) {
        if (widget instanceof ViewRenderer) {
          found.push(widget);
        }
      }
    }
  }
  return found;
}

/**
 * Bind the renderer to a notebook's registry and, once jupyterlab-manager has
 * given that registry a widget renderer with the notebook's widget manager,
 * make the live layer of the outputs drawn before then. (jupyterlab-manager
 * hands its manager only to widget renderers that are direct output children,
 * which ours, nested in the view renderer, are not.)
 */
async function attachToNotebook(
  panel: NotebookPanel,
  global: IRenderMimeRegistry
): Promise<void> {
  const registry = panel.content.rendermime;
  bindViewRenderer(registry);
  try {
    await panel.sessionContext.ready;
  } catch {
    return; // disposed before it was ready
  }
  const unbound = global.getFactory(WIDGET_MIME);
  // jupyterlab-manager replaces the cloned widget factory once the session is ready,
  // in a callback of its own: look for the change for a few seconds at most.
  for (
    let tries = 0;
    tries < 100 && registry.getFactory(WIDGET_MIME) === unbound;
    tries++
  ) {
    if (panel.isDisposed) {
      return;
    }
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  if (registry.getFactory(WIDGET_MIME) === unbound) {
    return; // no widget manager for this notebook: the static copies stay
  }
  for (const renderer of viewRenderersOf(panel)) {
    if (!renderer.isLive) {
      renderer.registry = registry;
      renderer.renderLive();
    }
  }
}

export const viewPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-memory:widget-fallback',
  description:
    'Shows the static copy of a jupyter-memory widget output when its model is gone.',
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
      tracker.forEach(panel => void attachToNotebook(panel, rendermime));
      tracker.widgetAdded.connect(
        (_, panel) => void attachToNotebook(panel, rendermime)
      );
    }
  }
};
