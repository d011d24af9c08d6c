import { defineConfig } from 'tsup';

// One bundle per module system so that `import` and `require` both get native code.
// `shims` gives the ESM build a `__dirname`, which src/scripts.ts uses to find lua/.
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  outExtension: ({ format }) => ({ js: format === 'cjs' ? '.cjs' : '.mjs' }),
  dts: true,
  shims: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  platform: 'node',
});
