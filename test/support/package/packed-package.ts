// The package as npm would publish it, for tests that install it as a user does. `npm pack`
// rebuilds dist/ first (its prepack script cleans it), so it packs a staged copy of what the
// package is made of: two tests packing at once never clean each other's dist/, nor the
// working tree's.
import { execFile } from 'node:child_process';
import { cp, mkdir, readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const repository = fileURLToPath(new URL('../../..', import.meta.url));
export const repositoryModules = join(repository, 'node_modules');

/** What `npm pack` reads: the manifest, the build's configuration, the sources, the docs it ships. */
const PACKED_FROM = [
  'package.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'README.md',
  'CHANGELOG.md',
  'LICENSE',
  'src',
  'docs',
  'api',
];

/**
 * Packs the package into `folder` as `npm pack` does for a publish (building it first) and
 * returns the tarball's path. Takes about 6 s on an idle machine (tsc), far more on a busy one.
 */
export async function packPackage(folder: string): Promise<string> {
  const staged = join(folder, 'staged');
  await mkdir(staged);
  for (const entry of PACKED_FROM) {
    await cp(join(repository, entry), join(staged, entry), { recursive: true });
  }
  await symlink(repositoryModules, join(staged, 'node_modules'));
  await run('npm', ['pack', '--pack-destination', folder], { cwd: staged });
  const [tarball] = (await readdir(folder)).filter((name) => name.endsWith('.tgz'));
  if (tarball === undefined) throw new Error(`npm pack left no tarball in ${folder}`);
  return join(folder, tarball);
}
