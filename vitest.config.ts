import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: real processes, sockets and namespaces are heavy; keep parallelism modest.
    maxWorkers: 2,
    // The default output, then every skipped suite and why (test/helpers/skip-summary-reporter.ts).
    reporters: ['default', './test/helpers/skip-summary-reporter.ts'],
    // Each file removes the temporary folders it made (test/helpers/remove-temp-dirs.ts).
    setupFiles: ['./test/helpers/remove-temp-dirs.ts'],
  },
});
