// A child process script bundled into one plain JavaScript file, for tests that start many
// children: under `node --import tsx` each start costs about 1.5 s of CPU (the loader thread
// transforms and resolves every module); the bundle starts in about 0.2 s. esbuild is the
// transformer tsx itself runs, so the code is the same.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll } from 'vitest';

export interface BundledChild {
  /** The bundle: run it with `node <path>`. */
  readonly path: string;
  /** Deletes the bundle. */
  dispose(): Promise<void>;
}

/** Bundles `entry` (a .ts file) with everything it imports, packages included. */
export async function bundleChild(entry: string): Promise<BundledChild> {
  const folder = await mkdtemp(join(tmpdir(), 'bundled-child-'));
  const path = join(folder, 'child.mjs');
  await build({
    entryPoints: [entry],
    outfile: path,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'error',
    // The bundled CommonJS packages (the stream client) require Node's modules.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  });
  return { path, dispose: () => rm(folder, { recursive: true, force: true }) };
}

/**
 * The bundle of `entry` for the test file that calls this: made before its tests, within
 * `timeoutMs`, and deleted after them. Returns the bundle's path, once made.
 */
export function bundledForFile(entry: URL, timeoutMs: number): () => string {
  let child: BundledChild | undefined;
  beforeAll(async () => {
    child = await bundleChild(fileURLToPath(entry));
  }, timeoutMs);
  afterAll(() => child?.dispose());
  return () => {
    if (child === undefined) throw new Error(`${entry.pathname} is bundled before the tests run`);
    return child.path;
  };
}
