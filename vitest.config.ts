import { defineConfig } from 'vitest/config'

// Tests resolve every @hourglass/* package to its TypeScript source through the
// "@hourglass/source" export condition, so one copy of each module (and one
// AsyncLocalStorage) is loaded and no build is needed to run a single test.
const conditions = ['@hourglass/source', 'node', 'development|production']

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    // Two cores: timing tests get their own process and do not fight each other.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
