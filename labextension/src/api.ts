/**
 * The REST client for the jupyter-memory server extension.
 *
 * Every call names the notebook it acts for (`path`, relative to the server
 * root): the server resolves the memory directory from that notebook's
 * folder, exactly as the kernel would.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** One memory, in the JSON shape shared with `jupyter-memory list --json`. */
export interface IMemory {
  file: string;
  name?: string | null;
  description?: string | null;
  type?: string | null;
  mtime?: string | null;
  age_days?: number | null;
  bytes?: number | null;
  indexed?: boolean | null;
  error?: string | null;
  /** ``private`` (the person's memdir) or ``team`` (the shared team folder). */
  scope?: string | null;
  [key: string]: unknown;
}

/** Where the memory of the notebook's project lives. */
export interface ILocation {
  memdir: string;
  project_root: string;
  source?: string;
  enabled?: boolean;
  enabled_reason?: string;
  exists?: boolean;
  /** The memdir relative to the server root, or null when it cannot be opened there. */
  server_path?: string | null;
}

export interface IListReply {
  location: ILocation;
  memories: IMemory[];
  stamp: string;
}

/** `jupyter-memory show --json`: the memory's record plus its whole text. */
export interface IReadReply extends IMemory {
  text: string;
}

/** One problem found by `doctor`. */
export interface IFinding {
  kind?: string;
  severity?: string;
  message?: string;
  file?: string | null;
  [key: string]: unknown;
}

export interface IDoctorReply {
  location: ILocation;
  findings: IFinding[];
}

export interface IStampReply {
  stamp: string;
}

/** An error answered by the server, as one short line for people. */
export class MemoryAPIError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** True when the reply says the server extension is not there at all. */
    readonly extensionMissing = false
  ) {
    super(message);
  }
}

/** What the panel says when the server has no jupyter-memory routes. */
export const EXTENSION_MISSING =
  'The jupyter-memory server extension is not running in this Jupyter server. ' +
  'Enable it with `jupyter server extension enable jupyter_memory`, then restart ' +
  'the server.';

/** The longest server message shown (ours are one or two sentences). */
const MAX_MESSAGE = 500;

/** The `message` of our own JSON error (`{"error": kind, "message": text}`), if it is one. */
function ownMessage(body: string): string | null {
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch {
    return null;
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    return null;
  }
  const { error, message } = data as Record<string, unknown>;
  if (typeof error !== 'string' || typeof message !== 'string' || !message) {
    return null;
  }
  const line = message.split(/\s+/).join(' ');
  return line.length > MAX_MESSAGE
    ? line.slice(0, MAX_MESSAGE - 1) + '…'
    : line;
}

/**
 * The error for a reply that was not ok, never its body: a page the server or a
 * proxy sends (a 404 page embeds the server's API token) must not reach the
 * screen, where a screenshot or a shared screen would catch it. Our own JSON
 * errors give their message; a 404 without one means the extension is missing;
 * anything else is its status line.
 */
export function replyError(
  status: number,
  statusText: string,
  body: string
): MemoryAPIError {
  const message = ownMessage(body);
  if (message !== null) {
    return new MemoryAPIError(status, message);
  }
  if (status === 404) {
    return new MemoryAPIError(status, EXTENSION_MISSING, true);
  }
  const reason = statusText.replace(/[^\w .,'()-]/g, '').slice(0, 60);
  return new MemoryAPIError(
    status,
    `The server answered HTTP ${status}${reason ? ` (${reason})` : ''}.`
  );
}

const NAMESPACE = 'jupyter-memory';

/**
 * Call the server extension and decode its JSON reply.
 *
 * Errors come back as `MemoryAPIError` carrying our server's own message, so
 * the panel can show people what was wrong; a body that is not our JSON is
 * never shown (see `replyError`).
 */
export async function requestAPI<T>(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, NAMESPACE, endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  if (!response.ok) {
    throw replyError(response.status, response.statusText, text);
  }
  if (text.length === 0) {
    return null as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    // A login page or a proxy's page answered in place of our JSON.
    throw new MemoryAPIError(
      response.status,
      `The server answered HTTP ${response.status} with a page, not the ` +
        "jupyter-memory server extension's JSON. If the extension is not " +
        'running in this Jupyter server, enable it with `jupyter server ' +
        'extension enable jupyter_memory`, then restart the server.',
      true
    );
  }
}

/** Build `endpoint?path=…` with the notebook path encoded. */
export function withPath(endPoint: string, notebookPath: string): string {
  return `${endPoint}?${new URLSearchParams({ path: notebookPath })}`;
}

/** Encode a memory file (`team/db.md`) as URL path segments. */
export function fileSegment(file: string): string {
  return file.split('/').map(encodeURIComponent).join('/');
}

/** The typed calls the front end makes. */
export const MemoryAPI = {
  list(notebookPath: string): Promise<IListReply> {
    return requestAPI<IListReply>(withPath('memories', notebookPath));
  },
  read(notebookPath: string, file: string): Promise<IReadReply> {
    return requestAPI<IReadReply>(
      withPath(`memories/${fileSegment(file)}`, notebookPath)
    );
  },
  forget(notebookPath: string, file: string): Promise<unknown> {
    return requestAPI(withPath(`memories/${fileSegment(file)}`, notebookPath), {
      method: 'DELETE'
    });
  },
  doctor(notebookPath: string): Promise<IDoctorReply> {
    return requestAPI<IDoctorReply>(withPath('doctor', notebookPath));
  },
  stamp(notebookPath: string): Promise<IStampReply> {
    return requestAPI<IStampReply>(withPath('stamp', notebookPath));
  }
};
