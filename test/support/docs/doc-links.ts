// The links of README.md and docs/**/*.md: each must lead to a file of the repository and, with
// a #fragment, to a heading (or an <a id>) of that file. No link leaves the repository: the
// project's README and docs stand on their own (and render on any code host); and the pages
// the package ships link only to what it ships. Checked over the repository
// (test/unit/docs/links.test.ts) and over the packed package, which ships docs/
// (test/integration/packed-package.test.ts).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

export interface Link {
  /** `docs/x.md:12` */
  readonly where: string;
  readonly target: string;
}

/** The Markdown text without fenced blocks (and inline code spans, unless `spans`), lines kept. */
function withoutCode(text: string, spans = false): string {
  let fenced = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^```/.test(line)) {
        fenced = !fenced;
        return '';
      }
      if (fenced) return '';
      return spans ? line : line.replace(/`[^`]*`/g, '``');
    })
    .join('\n');
}

/** Every Markdown file under `dir` of `root`, relative to `root`, sorted. */
export function markdownUnder(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return markdownUnder(root, path);
      return entry.name.endsWith('.md') ? [path] : [];
    })
    .sort();
}

export function linksOf(file: string, text: string): Link[] {
  const links: Link[] = [];
  withoutCode(text)
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        links.push({ where: `${file}:${i + 1}`, target: m[1] as string });
      }
      for (const m of line.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)) {
        links.push({ where: `${file}:${i + 1}`, target: m[1] as string });
      }
    });
  return links;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a Markdown text: its headings' (numbered when repeated) and its <a id>s. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutCode(text, true).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading !== null) {
      const base = slug(heading[1] as string);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] as string);
  }
  return anchors;
}

/**
 * What is wrong with each link, one line each: a link outside the repository, a file that does
 * not exist, an anchor its file does not have, and, given `shipped` (which paths the package
 * ships), a file the package leaves out: the shipped pages are read in node_modules, where
 * such a link leads nowhere. `read` gives a Markdown file's text.
 */
export function brokenLinks(
  root: string,
  files: readonly string[],
  read: (file: string) => string,
  shipped: (path: string) => boolean = () => true,
): string[] {
  const problems: string[] = [];
  for (const file of files) {
    for (const { where, target } of linksOf(file, read(file))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) {
        problems.push(`${where}: ${target} leads outside the repository`);
        continue;
      }
      const [path = '', anchor] = target.split('#');
      const resolved = path === '' ? file : normalize(join(dirname(file), decodeURI(path)));
      if (resolved.startsWith('..')) {
        problems.push(`${where}: ${target} leads outside the repository`);
        continue;
      }
      if (!shipped(resolved)) {
        problems.push(`${where}: ${target}: ${resolved} is not shipped in the package`);
        continue;
      }
      if (path !== '' && !existsSync(join(root, resolved))) {
        problems.push(`${where}: ${target}: no file ${resolved}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (
        !resolved.endsWith('.md') ||
        (path !== '' && statSync(join(root, resolved)).isDirectory())
      ) {
        problems.push(`${where}: ${target}: an anchor into a file that is not Markdown`);
        continue;
      }
      if (!anchorsOf(read(resolved)).has(anchor)) {
        problems.push(`${where}: ${target}: ${resolved} has no heading #${anchor}`);
      }
    }
  }
  return problems;
}

/** The paths package.json's `files` ships (each entry a file or a folder), and the manifest. */
export function shippedBy(files: readonly string[]): (path: string) => boolean {
  return (path) =>
    path === 'package.json' ||
    files.some((entry) => path === entry || path.startsWith(`${entry}/`));
}

/** The Markdown pages of a package shipping `files`, found under `root`, sorted. */
export function shippedMarkdown(root: string, files: readonly string[]): string[] {
  return files
    .flatMap((entry) => {
      if (entry.endsWith('.md')) return [entry];
      return existsSync(join(root, entry)) && statSync(join(root, entry)).isDirectory()
        ? markdownUnder(root, entry)
        : [];
    })
    .sort();
}
