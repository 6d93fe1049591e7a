// docs/getting-started.md as steps a test can run: the files it has the reader write (each
// code block marked `<!-- file: NAME -->`), and its shell commands in order, each `node` one
// with what the guide says it prints (the block marked `<!-- output -->` after it).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repository } from './packed-package.js';

export const GUIDE = join(repository, 'docs', 'getting-started.md');

/** A shell command of the guide, as a test carries it out. */
export type GuideCommand =
  /** `mkdir NAME && cd NAME`: the folder every later command runs in. */
  | { readonly kind: 'folder'; readonly name: string }
  /** An npm command run as written (`npm init -y`, `npm pkg set ...`, a dev dependency). */
  | { readonly kind: 'npm'; readonly args: readonly string[] }
  /** `npm install stream-windows`: the one npm command a test points at the packed tarball. */
  | { readonly kind: 'install' }
  /** Starting the broker: the one step a test replaces with the project's broker. */
  | { readonly kind: 'broker'; readonly line: string }
  /** A file of the guide run by `node FILE.mjs` or `npx tsx FILE.ts`. */
  | {
      readonly kind: 'node';
      readonly runner: 'node' | 'tsx';
      readonly file: string;
      readonly output: string | undefined;
    };

export interface Guide {
  /** File name to contents, in the guide's order. */
  readonly files: ReadonlyMap<string, string>;
  readonly commands: readonly GuideCommand[];
  /** Code blocks with no file marker: the reader is shown code the test would not run. */
  readonly unmarked: readonly string[];
}

export async function readGuide(): Promise<Guide> {
  return parseGuide(await readFile(GUIDE, 'utf8'));
}

/** A fenced block, with the marker comment right before it if any. */
const BLOCK = /(?:<!-- (file: \S+|output) -->\s*)?```(\w*)\n([\s\S]*?)```/g;

export function parseGuide(markdown: string): Guide {
  const files = new Map<string, string>();
  const commands: GuideCommand[] = [];
  const unmarked: string[] = [];
  for (const [, marker, language, code = ''] of markdown.matchAll(BLOCK)) {
    if (marker?.startsWith('file: ') === true) {
      files.set(marker.slice('file: '.length), code);
    } else if (marker === 'output') {
      const last = commands.at(-1);
      if (last?.kind !== 'node' || last.output !== undefined) {
        throw new Error(`an output block follows no node command: ${code}`);
      }
      commands[commands.length - 1] = { ...last, output: code };
    } else if (language === 'sh') {
      commands.push(...shellLines(code).map(command));
    } else {
      unmarked.push(code);
    }
  }
  return { files, commands, unmarked };
}

function shellLines(code: string): string[] {
  return code
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** What a line of the guide's shell blocks is; a line a test cannot carry out is an error. */
function command(line: string): GuideCommand {
  const folder = /^mkdir (\S+) && cd \1$/.exec(line)?.[1];
  if (folder !== undefined) return { kind: 'folder', name: folder };
  if (line === 'npm install stream-windows') return { kind: 'install' };
  if (/^npm (init -y|pkg set \S+|install --save-dev \S+)$/.test(line)) {
    return { kind: 'npm', args: line.split(' ').slice(1) };
  }
  if (line.startsWith('docker ')) return { kind: 'broker', line };
  const [, script, typescript] = /^(?:node (\S+\.mjs)|npx tsx (\S+\.ts))$/.exec(line) ?? [];
  if (script !== undefined)
    return { kind: 'node', runner: 'node', file: script, output: undefined };
  if (typescript !== undefined) {
    return { kind: 'node', runner: 'tsx', file: typescript, output: undefined };
  }
  throw new Error(`the guide runs a command no test carries out: ${line}`);
}
