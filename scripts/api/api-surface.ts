/**
 * The public surface of each entry point of package.json's `exports`, read with the TypeScript
 * compiler: every exported symbol, its declaration as the published .d.ts declares it, and its
 * TSDoc (summary and `@example`s). The API report and the API reference are written from this.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

export const ROOT = resolve(import.meta.dirname, '../..');

export interface EntryPoint {
  /** As a user imports it: `stream-windows/memory`. */
  readonly specifier: string;
  /** The file name the report and the reference page get: `memory` (`stream-windows` for `.`). */
  readonly slug: string;
  /** Its source file, relative to the repository: `src/memory/index.ts`. */
  readonly source: string;
}

export interface ApiSymbol {
  /** The name it is exported under. */
  readonly name: string;
  /** Its declarations as the .d.ts declares them, without comments. */
  readonly declaration: string;
  /** The TSDoc text before the tags; the summary is its first paragraph. */
  readonly documentation: string;
  /** The bodies of its `@example` tags. */
  readonly examples: readonly string[];
}

export interface EntrySurface {
  readonly entry: EntryPoint;
  readonly symbols: readonly ApiSymbol[];
}

/** The entry points, from package.json's `exports` (`./dist/x/index.d.ts` → `src/x/index.ts`). */
export function entryPoints(root = ROOT): EntryPoint[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, { types: string }>;
  };
  return Object.entries(pkg.exports).map(([subpath, conditions]) => {
    const source = conditions.types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts');
    const slug = subpath === '.' ? pkg.name : subpath.slice(2);
    const specifier = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    return { specifier, slug, source };
  });
}

/** The first sentence of a symbol's documentation, on one line ('' when it has none). */
export function summaryOf(symbol: ApiSymbol): string {
  const paragraph = (symbol.documentation.split(/\n\s*\n/)[0] ?? '').replace(/\s+/g, ' ').trim();
  return /^.*?[.!?](?=\s|$)/.exec(paragraph)?.[0] ?? paragraph;
}

/** Reads the surface of every entry point with one compiler program. */
export function apiSurface(root = ROOT): EntrySurface[] {
  const entries = entryPoints(root);
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.build.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(d) },
  );
  if (config === undefined) throw new Error('tsconfig.build.json could not be read');
  const program = ts.createProgram(
    entries.map((e) => join(root, e.source)),
    { ...config.options, declaration: true, emitDeclarationOnly: true, noEmit: false },
  );
  const checker = program.getTypeChecker();
  const printer = ts.createPrinter({ removeComments: true });
  // Declarations are emitted only for the files that declare an exported symbol: checking
  // those files alone, not all of src/, keeps the report a matter of seconds.
  const declarations = new Map<ts.SourceFile, ts.SourceFile>();
  const dtsOf = (file: ts.SourceFile): ts.SourceFile => {
    const known = declarations.get(file);
    if (known !== undefined) return known;
    const written: ts.SourceFile[] = [];
    const emitted = program.emit(
      file,
      (fileName, text) => {
        if (fileName.endsWith('.d.ts')) {
          written.push(ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true));
        }
      },
      undefined,
      true,
    );
    const [problem] = emitted.diagnostics;
    if (problem !== undefined) fail(problem);
    const [dts] = written;
    if (dts === undefined) throw new Error(`no declarations emitted for ${file.fileName}`);
    declarations.set(file, dts);
    return dts;
  };

  return entries.map((entry) => {
    const file = program.getSourceFile(join(root, entry.source));
    const module = file && checker.getSymbolAtLocation(file);
    if (module === undefined) throw new Error(`${entry.source}: not a module`);
    const symbols = checker.getExportsOfModule(module).map((exported): ApiSymbol => {
      const symbol =
        exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const statements = new Set<ts.Statement>();
      // Every statement declaring the name: overloads, and a const merged with a type.
      for (const declaration of symbol.declarations ?? []) {
        const dts = dtsOf(declaration.getSourceFile());
        for (const s of dts.statements) if (declares(s, symbol.name)) statements.add(s);
      }
      if (statements.size === 0) {
        throw new Error(`${entry.source}: ${symbol.name} not found in the declarations`);
      }
      const printed = [...statements].map((s) =>
        printer.printNode(ts.EmitHint.Unspecified, withoutPrivates(s), s.getSourceFile()),
      );
      if (exported.name !== symbol.name) printed.unshift(`// exported as ${exported.name}`);
      return {
        name: exported.name,
        declaration: printed.join('\n'),
        documentation: ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim(),
        examples: symbol
          .getJsDocTags(checker)
          .filter((tag) => tag.name === 'example')
          .map((tag) => ts.displayPartsToString(tag.text).trim()),
      };
    });
    return { entry, symbols };
  });
}

/** Whether a top-level statement of a .d.ts declares `name`. */
function declares(statement: ts.Statement, name: string): boolean {
  if (ts.isVariableStatement(statement)) {
    return statement.declarationList.declarations.some(
      (d) => ts.isIdentifier(d.name) && d.name.text === name,
    );
  }
  const named = statement as ts.Statement & { name?: ts.Node };
  return named.name !== undefined && ts.isIdentifier(named.name) && named.name.text === name;
}

/** A class without its private members: a user cannot reach them, so they are not surface. */
function withoutPrivates(statement: ts.Statement): ts.Statement {
  if (!ts.isClassDeclaration(statement)) return statement;
  const isPrivate = (m: ts.ClassElement) =>
    (ts.getCombinedModifierFlags(m) & ts.ModifierFlags.Private) !== 0 ||
    (m.name !== undefined && ts.isPrivateIdentifier(m.name));
  return ts.factory.updateClassDeclaration(
    statement,
    statement.modifiers,
    statement.name,
    statement.typeParameters,
    statement.heritageClauses,
    statement.members.filter((m) => !isPrivate(m)),
  );
}

function fail(diagnostic: ts.Diagnostic): never {
  throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
}
