/**
 * Unit tests of the pure modules (src/__tests__/*.spec.ts), run offline by `npm test`.
 *
 * ts-jest transpiles them to CommonJS; the JupyterLab packages they would load are
 * replaced by small fakes in each test, so no browser or server is needed.
 */
module.exports = {
  testEnvironment: 'node',
  testRegex: 'src/__tests__/.*\\.spec\\.ts$',
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      {
        // Transpile only: tsc (the build) and eslint type-check these files already.
        isolatedModules: true,
        tsconfig: {
          module: 'commonjs',
          esModuleInterop: true,
          strict: true,
          target: 'ES2020',
          lib: ['DOM', 'DOM.Iterable', 'ES2020'],
          types: ['jest', 'node']
        }
      }
    ]
  }
};
