import { readFileSync } from 'node:fs';

/**
 * The package's version, from its package.json: two folders up both from src/cli (tsx) and
 * from dist/cli (the built bin), so one path serves both.
 */
export function packageVersion(): string {
  const manifest = JSON.parse(
    readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
  ) as { version?: unknown };
  return String(manifest.version);
}
