/**
 * npm run api:update: writes the API report (api/) and the API reference (docs/reference/api/)
 * of every entry point. test/unit/docs/api-report.test.ts fails when the committed files differ
 * from what this writes, or when an exported symbol has no TSDoc summary.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { apiPages } from './api/api-pages.js';
import { ROOT, apiSurface } from './api/api-surface.js';

// Removed first, so an entry point that is gone leaves no page behind.
for (const folder of ['api', 'docs/reference/api']) {
  rmSync(join(ROOT, folder), { recursive: true, force: true });
}
for (const [path, text] of apiPages(apiSurface())) {
  mkdirSync(dirname(join(ROOT, path)), { recursive: true });
  writeFileSync(join(ROOT, path), text);
  console.log(`wrote ${path}`);
}
