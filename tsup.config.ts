import { defineConfig } from 'tsup';

export default defineConfig([
  // One bundle per module system so that `import` and `require` both get native code. The Lua
  // scripts are inside them (src/protocol/lua.generated.ts): the package reads no files at run time.
  // `rlock/opentelemetry` is an entry of its own: the main one never loads @opentelemetry/api
  // (an optional peer dependency).
  {
    entry: { index: 'src/index.ts', opentelemetry: 'src/otel/index.ts' },
    format: ['esm', 'cjs'],
    outExtension: ({ format }) => ({ js: format === 'cjs' ? '.cjs' : '.mjs' }),
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    platform: 'node',
  },
  // The `rlock` command (package.json "bin"): one file, run by node.
  {
    entry: { cli: 'src/cli/rlock.ts' },
    format: ['cjs'],
    outExtension: () => ({ js: '.cjs' }),
    sourcemap: true,
    target: 'node20',
    platform: 'node',
  },
]);
