// The TypeScript blocks of README.md and docs/**/*.md, and what checks them: every block is
// type-checked against the package's public entry points (mapped to src/), and the ones
// marked `<!-- run -->` are run on the embedded broker. The rules are CONTRIBUTING.md's
// ("Code blocks in the documentation").
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { entryPoints } from '../../../scripts/api/api-surface.js';
import { markdownUnder } from '../../support/docs/doc-links.js';

export const ROOT = resolve(import.meta.dirname, '../../..');

/** The entry points a block may import, as the package's `exports` name them. */
export const ENTRY_POINTS: Readonly<Record<string, string>> = Object.fromEntries(
  entryPoints(ROOT).map((entry) => [entry.specifier, entry.source]),
);

/**
 * 'program': a complete module; 'fragment': compiled with its context (`fragmentModule`);
 * 'shown': a block marked `<!-- path -->` showing a file of the repository as it is, which tsc
 * checks with the project (the block is compared with the file instead).
 */
export type BlockKind = 'program' | 'fragment' | 'shown';

export interface DocBlock {
  /** `README.md:42`: the file and the line of the opening fence. */
  readonly where: string;
  readonly kind: BlockKind;
  /** Marked `<!-- run -->`: a complete program run on the embedded broker. */
  readonly run: boolean;
  readonly code: string;
  /** A 'shown' block's file, relative to the repository. */
  readonly shows?: string;
}

/** README.md, CONTRIBUTING.md and every Markdown file under docs/, relative to the repository. */
export function documentationFiles(root = ROOT): string[] {
  return ['README.md', 'CONTRIBUTING.md', ...markdownUnder(root, 'docs')];
}

/**
 * The ```ts blocks of one Markdown text. ```ts is a complete module; ```ts fragment a
 * fragment (see `compileBlocks`); a `<!-- run -->` line before the fence marks a program to run.
 */
export function extractBlocks(file: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    // A fence may be indented (a block inside a list item): its lines lose that indentation.
    const open = /^( *)```(ts|typescript)(?:\s+(\S+))?\s*$/.exec(lines[i] ?? '');
    if (open === null) {
      if (/^ *```/.test(lines[i] ?? '')) i = closingFence(lines, i, file);
      continue;
    }
    const indent = open[1] as string;
    const marker = open[3];
    if (marker !== undefined && marker !== 'fragment') {
      throw new Error(
        `${file}:${i + 1}: unknown code block marker '${marker}' (ts or ts fragment)`,
      );
    }
    const end = closingFence(lines, i, file);
    const previous = lines.slice(Math.max(0, i - 2), i).join('\n');
    const run = /<!-- run -->/.test(previous);
    const shows = /<!-- ([\w./-]+\.ts) -->/.exec(previous)?.[1];
    if (run && marker === 'fragment') {
      throw new Error(`${file}:${i + 1}: a fragment cannot be run`);
    }
    blocks.push({
      where: `${file}:${i + 1}`,
      kind: shows !== undefined ? 'shown' : marker === 'fragment' ? 'fragment' : 'program',
      run,
      ...(shows === undefined ? {} : { shows }),
      code:
        lines
          .slice(i + 1, end)
          .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
          .join('\n') + '\n',
    });
    i = end;
  }
  return blocks;
}

function closingFence(lines: readonly string[], open: number, file: string): number {
  for (let j = open + 1; j < lines.length; j++) if (/^ *```\s*$/.test(lines[j] ?? '')) return j;
  throw new Error(`${file}:${open + 1}: a code block is never closed`);
}

/**
 * What a fragment may use without defining it: the context a reader assumes (a source, a
 * target, a connected broker, the value types of the examples). A fragment gets the
 * declarations of the names it uses and neither declares nor imports, so a fragment that
 * uses a name it forgot to define in a way the context does not allow still fails. Names of
 * the public entry points a fragment uses without importing them are imported for it.
 */
const FRAGMENT_CONTEXT: Readonly<Record<string, string>> = {
  Reading:
    'interface Reading { sensor: string; celsius: number; fahrenheit: number; value: number; t: number; at: number; }',
  Event: 'interface Event { id: string; at: number; }',
  Payment: 'interface Payment { card: string; amount: number; }',
  Order: 'interface Order { shop: string; amount: number; }',
  src: 'declare const src: import("stream-windows").Source;',
  source: 'declare const source: import("stream-windows").Source;',
  target: 'declare const target: import("stream-windows").Target;',
  redactedTarget: 'declare const redactedTarget: import("stream-windows").Target;',
  bulkTarget: 'declare const bulkTarget: import("stream-windows").Target;',
  job: 'declare const job: import("stream-windows").Runner<Reading, number, number>;',
  rabbit: 'declare const rabbit: import("stream-windows/rabbitmq").RabbitMQ;',
  broker: 'declare const broker: import("stream-windows/memory").MemoryBroker;',
  signal: 'declare const signal: AbortSignal;',
  url: 'declare const url: string;',
  readings: 'declare const readings: readonly { sensor: string; celsius: number; at: number }[];',
  value: 'declare const value: unknown;',
  creationTime: 'declare const creationTime: number;',
  sum: 'declare const sum: (total: number, r: Reading) => number;',
  save: 'declare function save(key: unknown, start: number, value: unknown): void;',
  checkpoint: 'declare function checkpoint(next: bigint): void;',
  db: 'declare const db: import("@electric-sql/pglite").PGlite;',
  pino: 'declare function pino(): import("stream-windows").Logger;',
};

/** Every name the public entry points export, and the entry point exporting it. */
function publicNames(program: ts.Program): Map<string, string> {
  const checker = program.getTypeChecker();
  const names = new Map<string, string>();
  for (const [specifier, path] of Object.entries(ENTRY_POINTS)) {
    const file = program.getSourceFile(join(ROOT, path));
    const symbol = file === undefined ? undefined : checker.getSymbolAtLocation(file);
    if (symbol === undefined) throw new Error(`entry point ${path} not found`);
    for (const exported of checker.getExportsOfModule(symbol)) {
      if (!names.has(exported.name)) names.set(exported.name, specifier);
    }
  }
  return names;
}

const identifier = (name: string) => new RegExp(`(?<![\\w.$'"])${name}\\b`);
const declares = (code: string, name: string) =>
  new RegExp(
    `\\b(?:const|let|var|function|class|interface|type|enum)\\s+${name}\\b|import[^;]*\\b${name}\\b[^;]*from|[{,]\\s*${name}\\s*[,}][^=;]*=`,
  ).test(code);

/** The module a fragment is compiled as: its imports first, then its context, then itself. */
export function fragmentModule(code: string, exported: ReadonlyMap<string, string>): string {
  const lines = code.split('\n');
  const imports = lines.filter((line) => /^import\s/.test(line));
  const body = lines.filter((line) => !/^import\s/.test(line));
  const needs = (name: string) => identifier(name).test(body.join('\n')) && !declares(code, name);
  // The names a fragment needs, and the ones their declarations need in turn.
  const wanted = new Set(Object.keys(FRAGMENT_CONTEXT).filter(needs));
  for (const name of wanted) {
    for (const other of Object.keys(FRAGMENT_CONTEXT)) {
      if (other !== name && identifier(other).test(FRAGMENT_CONTEXT[name] ?? '')) wanted.add(other);
    }
  }
  const context = Object.entries(FRAGMENT_CONTEXT)
    .filter(([name]) => wanted.has(name))
    .map(([, declaration]) => declaration);
  const implicit = [...exported]
    .filter(([name]) => !(name in FRAGMENT_CONTEXT) && needs(name))
    .map(([name, specifier]) => `import { ${name} } from '${specifier}';`);
  return [...imports, ...implicit, ...context, 'export {};', ...body].join('\n');
}

/** The compiler options of tsconfig.json, with the entry points mapped to src/. */
function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile.bind(ts.sys));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const paths: Record<string, string[]> = {};
  for (const [specifier, path] of Object.entries(ENTRY_POINTS)) paths[specifier] = [path];
  return { ...parsed.options, noEmit: true, baseUrl: ROOT, paths, noUnusedLocals: false };
}

export interface BlockDiagnostic {
  readonly where: string;
  readonly message: string;
}

/**
 * Type-checks the blocks in one program: each block is its own module (a `.mts` file under a
 * folder of the repository that does not exist, so its imports resolve as the repository's).
 * Returns one entry per error, with the block's place.
 */
export function compileBlocks(blocks: readonly DocBlock[]): BlockDiagnostic[] {
  const options = compilerOptions();
  const base = ts.createProgram(
    Object.values(ENTRY_POINTS).map((p) => join(ROOT, p)),
    options,
  );
  const exported = publicNames(base);
  const virtual = new Map<string, { block: DocBlock; text: string }>();
  blocks.forEach((block, index) => {
    if (block.kind === 'shown') return;
    const text = block.kind === 'fragment' ? fragmentModule(block.code, exported) : block.code;
    virtual.set(join(ROOT, '.doc-blocks', `block-${index}.mts`), { block, text });
  });
  const host = ts.createCompilerHost(options);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name)?.text ?? readFile.call(host, name);
  host.getSourceFile = (name, version, onError, create) => {
    const entry = virtual.get(name);
    if (entry !== undefined) return ts.createSourceFile(name, entry.text, version, true);
    return getSourceFile.call(host, name, version, onError, create);
  };
  const program = ts.createProgram({
    rootNames: [...virtual.keys()],
    options,
    host,
    oldProgram: base,
  });
  const found: BlockDiagnostic[] = [];
  for (const [name, { block }] of virtual) {
    const file = program.getSourceFile(name);
    const diagnostics = [
      ...program.getSyntacticDiagnostics(file),
      ...program.getSemanticDiagnostics(file),
    ];
    for (const d of diagnostics) {
      const line =
        d.file !== undefined && d.start !== undefined
          ? d.file.getLineAndCharacterOfPosition(d.start).line + 1
          : 0;
      found.push({
        where: `${block.where} (line ${line} of the ${block.kind})`,
        message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
      });
    }
  }
  return found;
}

/** A runnable block with its entry-point imports pointing at src/, to import from `dir`. */
export function runnableSource(code: string, dir: string): string {
  return code.replace(/from '(stream-windows(?:\/\w+)?)'/g, (whole, specifier: string) => {
    const path = ENTRY_POINTS[specifier];
    if (path === undefined) throw new Error(`no entry point ${specifier}`);
    return `from '${relative(dir, join(ROOT, path))
      .replaceAll('\\', '/')
      .replace(/^(?!\.)/, './')}'`;
  });
}

/** The `// ` comment lines a runnable block ends with: what it prints, line by line. */
export function expectedOutput(code: string): string[] {
  const lines = code.trimEnd().split('\n');
  const tail: string[] = [];
  for (let i = lines.length - 1; i >= 0 && /^\/\/ /.test(lines[i] ?? ''); i--) {
    tail.unshift((lines[i] ?? '').slice(3));
  }
  return tail;
}

export function readDoc(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8');
}

export { dirname };
