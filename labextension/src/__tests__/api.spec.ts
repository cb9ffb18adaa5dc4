const makeRequest = jest.fn();

class NetworkError extends Error {
  constructor(readonly original: TypeError) {
    super(original.message);
  }
}

jest.mock('@jupyterlab/coreutils', () => ({
  URLExt: {
    join: (...parts: string[]) =>
      parts.map(p => p.replace(/^\/+|\/+$/g, '')).join('/')
  }
}));

jest.mock('@jupyterlab/services', () => ({
  ServerConnection: {
    makeSettings: () => ({ baseUrl: 'http://lab/' }),
    makeRequest: (...args: unknown[]) => makeRequest(...args),
    NetworkError
  }
}));

import {
  EXTENSION_MISSING,
  fileSegment,
  MemoryAPI,
  MemoryAPIError,
  replyError,
  requestAPI,
  withPath
} from '../api';

const settings = { baseUrl: 'http://lab/' } as any;

function reply(status: number, body: string): Response {
  return new Response(body, { status, statusText: 'Status ' + status });
}

describe('api', () => {
  beforeEach(() => makeRequest.mockReset());

  it('encodes the notebook path and memory files', () => {
    expect(withPath('memories', 'dir/a b&c.ipynb')).toBe(
      'memories?path=dir%2Fa+b%26c.ipynb'
    );
    expect(fileSegment('team/db notes#1.md')).toBe('team/db%20notes%231.md');
  });

  it('decodes a JSON reply from the namespaced URL', async () => {
    makeRequest.mockResolvedValue(reply(200, '{"stamp": "s1"}'));
    await expect(requestAPI('stamp?path=a', {}, settings)).resolves.toEqual({
      stamp: 's1'
    });
    expect(makeRequest.mock.calls[0][0]).toBe(
      'http://lab/jupyter-memory/stamp?path=a'
    );
  });

  it("reports the server's own error message", async () => {
    makeRequest.mockResolvedValue(
      reply(
        404,
        '{"error": "MemoryNotFound", "message": "No memory named x.md"}'
      )
    );
    const error = await requestAPI('memories/x.md', {}, settings).catch(
      (e: any) => e
    );
    expect(error).toBeInstanceOf(MemoryAPIError);
    expect(error.status).toBe(404);
    expect(error.message).toBe('No memory named x.md');
    expect(error.extensionMissing).toBe(false);
  });

  it('never shows a body that is not our JSON, only the status line', async () => {
    makeRequest.mockResolvedValue(reply(500, 'boom <b>secret</b>'));
    await expect(requestAPI('x', {}, settings)).rejects.toThrow(
      'The server answered HTTP 500 (Status 500).'
    );
    makeRequest.mockResolvedValue(reply(502, ''));
    await expect(requestAPI('x', {}, settings)).rejects.toThrow(
      'The server answered HTTP 502 (Status 502).'
    );
    // jupyter_server's own JSON errors are not ours: their status line only.
    makeRequest.mockResolvedValue(
      reply(403, '{"message": "Forbidden <img src=x>", "reason": null}')
    );
    await expect(requestAPI('x', {}, settings)).rejects.toThrow(
      'The server answered HTTP 403 (Status 403).'
    );
  });

  it('names a missing server extension, and never shows its 404 page', async () => {
    const token = 'c0ffee1234567890token';
    const page =
      '<!DOCTYPE HTML><html><head><title>Jupyter Server</title></head>' +
      `<body data-jupyter-api-token="${token}"><h1>404 : Not Found</h1>` +
      '<p>You are requesting a page that does not exist!</p></body></html>';
    makeRequest.mockResolvedValue(reply(404, page));
    const error = await requestAPI('memories?path=a', {}, settings).catch(
      (e: any) => e
    );
    expect(error).toBeInstanceOf(MemoryAPIError);
    expect(error.extensionMissing).toBe(true);
    expect(error.message).toBe(EXTENSION_MISSING);
    expect(error.message).toContain(
      'The jupyter-memory server extension is not running in this Jupyter server'
    );
    expect(error.message).toContain(
      'jupyter server extension enable jupyter_memory'
    );
    expect(error.message).not.toContain(token);
    expect(error.message).not.toContain('<');
  });

  it('says so when a page answers in place of our JSON', async () => {
    const page =
      '<html><body data-jupyter-api-token="t0k3n">Log in</body></html>';
    makeRequest.mockResolvedValue(reply(200, page));
    const error = await requestAPI('stamp?path=a', {}, settings).catch(
      (e: any) => e
    );
    expect(error).toBeInstanceOf(MemoryAPIError);
    expect(error.extensionMissing).toBe(true);
    expect(error.message).toContain('HTTP 200 with a page');
    expect(error.message).not.toContain('t0k3n');
  });

  it('keeps our own messages short and on one line', () => {
    const long = 'word '.repeat(400);
    const body = JSON.stringify({
      error: 'BadRequest',
      message: `a\n\nb ${long}`
    });
    const error = replyError(400, 'Bad Request', body);
    expect(error.message.startsWith('a b word')).toBe(true);
    expect(error.message.length).toBeLessThanOrEqual(500);
    expect(replyError(418, "I'm a <b>teapot</b>", '').message).toBe(
      "The server answered HTTP 418 (I'm a bteapotb)."
    );
  });

  it('wraps a failed fetch in a network error', async () => {
    makeRequest.mockRejectedValue(new TypeError('offline'));
    const error = await requestAPI('x', {}, settings).catch((e: any) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toBe('offline');
  });

  it('sends DELETE to forget a memory', async () => {
    makeRequest.mockResolvedValue(reply(200, ''));
    await expect(MemoryAPI.forget('nb.ipynb', 'a/b.md')).resolves.toBeNull();
    const [url, init] = makeRequest.mock.calls[0];
    expect(url).toBe('http://lab/jupyter-memory/memories/a/b.md?path=nb.ipynb');
    expect(init).toEqual({ method: 'DELETE' });
  });
});
