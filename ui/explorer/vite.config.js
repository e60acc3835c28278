// The Explorer's build: `make` runs `vite build --outDir build/ui/explorer`,
// then scripts/ui-embed.py compiles the output into the binary (src/ui).
// Relative asset URLs (base './') because explorer.path and server.prefix are
// chosen at run time; hashed names under assets/ are served as immutable.
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    target: 'es2020',
    assetsDir: 'assets',
    sourcemap: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 500,
  },
});
