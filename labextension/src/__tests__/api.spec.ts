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
  fileSegment,
  MemoryAPI,
  MemoryAPIError,
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
      reply(404, '{"message": "No memory named x.md"}')
    );
    const error = await requestAPI('memories/x.md', {}, settings).catch(
      (e: any) => e
    );
    expect(error).toBeInstanceOf(MemoryAPIError);
    expect(error.status).toBe(404);
    expect(error.message).toBe('No memory named x.md');
  });

  it('falls back to the text, then to the status line', async () => {
    makeRequest.mockResolvedValue(reply(500, 'boom'));
    await expect(requestAPI('x', {}, settings)).rejects.toThrow('boom');
    makeRequest.mockResolvedValue(reply(502, ''));
    await expect(requestAPI('x', {}, settings)).rejects.toThrow(
      '502 Status 502'
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
