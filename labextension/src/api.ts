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

/** An error answered by the server, with its JSON message. */
export class MemoryAPIError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
  }
}

const NAMESPACE = 'jupyter-memory';

/**
 * Call the server extension and decode its JSON reply.
 *
 * Errors come back as `MemoryAPIError` carrying the server's own message, so
 * the panel can show people what was wrong rather than a bare status code.
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
  let data: any = null;
  if (text.length > 0) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    const message =
      (data && typeof data === 'object' && data.message) ||
      (typeof data === 'string' && data) ||
      `${response.status} ${response.statusText}`;
    throw new MemoryAPIError(response.status, String(message));
  }
  return data as T;
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
