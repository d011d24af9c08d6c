import { defineConfig } from 'tsup';

// One bundle per module system so that `import` and `require` both get native code. The Lua
// scripts are inside them (src/lua.generated.ts): the package reads no files at run time.
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  outExtension: ({ format }) => ({ js: format === 'cjs' ? '.cjs' : '.mjs' }),
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  platform: 'node',
});
