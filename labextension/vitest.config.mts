import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'jsdom',
    include: ['test/**/*.test.ts'],
    testTimeout: 60000,
    hookTimeout: 120000
  }
});
