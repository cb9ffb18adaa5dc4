jest.mock('@jupyterlab/coreutils', () => ({
  PageConfig: { getOption: () => '' }
}));

import { absoluteNotebookPath, setPathCode } from '../kernelpath';

describe('kernelpath', () => {
  it('joins the server root and the local path', () => {
    expect(absoluteNotebookPath('a/b.ipynb', '/srv/root')).toBe(
      '/srv/root/a/b.ipynb'
    );
    expect(absoluteNotebookPath('a.ipynb', '/srv/root///')).toBe(
      '/srv/root/a.ipynb'
    );
    expect(absoluteNotebookPath('a.ipynb', 'C:\\work\\')).toBe(
      'C:\\work/a.ipynb'
    );
    expect(absoluteNotebookPath('a.ipynb', '')).toBe('a.ipynb');
    expect(absoluteNotebookPath('', '/srv')).toBe('/srv');
  });

  it('makes Python that sets the path and fails silently', () => {
    const code = setPathCode('/srv/it\'s "here"\n.ipynb');
    const lines = code.split('\n');
    expect(lines[0]).toBe('try:');
    expect(lines[1]).toContain(
      '.set_notebook_path("/srv/it\'s \\"here\\"\\n.ipynb")'
    );
    expect(lines.slice(2)).toEqual(['except Exception:', '    pass']);
  });
});
