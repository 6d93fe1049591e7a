/**
 * The public surface of each entry point of package.json's `exports`, read with the TypeScript
 * compiler: every exported symbol, its declaration as the published .d.ts declares it, its
 * TSDoc (summary and `@example`s), and the TSDoc of the public members of its classes, interfaces
 * and object types. The API report and the API reference are written from this.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
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
  /** Its public members, when it is a class, an interface or an object type; else none. */
  readonly members: readonly ApiMember[];
}

/** A public property or method of a class, an interface or an object type (`type X = { … }`). */
export interface ApiMember {
  /** The name of the type that declares it, as declared (not as exported). */
  readonly owner: string;
  readonly name: string;
  /** Where the owner is declared, relative to the repository: `src/engine/runner.ts`. */
  readonly source: string;
  /** Its TSDoc text before the tags; inherited from the member it overrides or implements. */
  readonly documentation: string;
}

export interface EntrySurface {
  readonly entry: EntryPoint;
  readonly symbols: readonly ApiSymbol[];
  /**
   * The declarations the exported ones name, directly or through each other, that no entry
   * point exports (api-extractor's "forgotten exports"): a user meets them through the
   * exported ones, so a change to them is a change to the surface too. By name.
   */
  readonly referenced: readonly string[];
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

/** The first sentence of a symbol's or a member's documentation, on one line ('' when none). */
export function summaryOf(symbol: { readonly documentation: string }): string {
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
  const sources = new Map<ts.SourceFile, ts.SourceFile>();
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
    sources.set(dts, file);
    return dts;
  };

  const print = (statement: ts.Statement): string =>
    printer.printNode(
      ts.EmitHint.Unspecified,
      withoutPrivates(statement),
      statement.getSourceFile(),
    );
  /** The statements of the .d.ts of `file` that declare `name`: overloads, merged declarations. */
  const statementsOf = (file: ts.SourceFile, name: string): ts.Statement[] =>
    dtsOf(file).statements.filter((s) => declares(s, name));
  /** Where `name`, as a .d.ts uses it, is declared: in it, or through its relative imports. */
  const locate = (name: string, dts: ts.SourceFile): Located | undefined => {
    const file = sources.get(dts);
    if (file === undefined) return undefined;
    if (dts.statements.some((s) => declares(s, name))) return { file, name };
    for (const statement of dts.statements) {
      const link = importedAs(statement, name);
      if (link === undefined || !link.from.startsWith('.')) continue;
      const path = resolve(dirname(file.fileName), link.from.replace(/\.js$/, '.ts'));
      const target = program.getSourceFile(path);
      return target && locate(link.name, dtsOf(target));
    }
    return undefined;
  };

  const exported = new Set<string>();
  const surfaces = entries.map((entry) => {
    const file = program.getSourceFile(join(root, entry.source));
    const module = file && checker.getSymbolAtLocation(file);
    if (module === undefined) throw new Error(`${entry.source}: not a module`);
    const statements: ts.Statement[] = [];
    const symbols = checker.getExportsOfModule(module).map((alias): ApiSymbol => {
      const symbol = alias.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(alias) : alias;
      const own = new Set<ts.Statement>();
      for (const declaration of symbol.declarations ?? []) {
        const source = declaration.getSourceFile();
        exported.add(locationKey({ file: source, name: symbol.name }));
        for (const s of statementsOf(source, symbol.name)) own.add(s);
      }
      if (own.size === 0) {
        throw new Error(`${entry.source}: ${symbol.name} not found in the declarations`);
      }
      statements.push(...own);
      const printed = [...own].map(print);
      if (alias.name !== symbol.name) printed.unshift(`// exported as ${alias.name}`);
      return {
        name: alias.name,
        declaration: printed.join('\n'),
        documentation: ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim(),
        examples: symbol
          .getJsDocTags(checker)
          .filter((tag) => tag.name === 'example')
          .map((tag) => ts.displayPartsToString(tag.text).trim()),
        members: membersOf(symbol, checker, root),
      };
    });
    return { entry, symbols, statements };
  });

  return surfaces.map(({ entry, symbols, statements }) => {
    // Followed from the exported declarations until only exported or outside names remain.
    const seen = new Set<string>();
    const referenced: string[] = [];
    const queue = [...statements];
    for (let statement = queue.shift(); statement; statement = queue.shift()) {
      for (const name of typeNamesIn(statement)) {
        const location = locate(name, statement.getSourceFile());
        if (location === undefined) continue;
        const key = locationKey(location);
        if (exported.has(key) || seen.has(key)) continue;
        seen.add(key);
        const own = statementsOf(location.file, location.name);
        referenced.push(own.map(print).join('\n'));
        queue.push(...own);
      }
    }
    return { entry, symbols, referenced: referenced.sort() };
  });
}

/**
 * The public members a class, an interface or a type alias of an object literal declares
 * itself (inherited ones are listed at the type that declares them), static ones included.
 */
function membersOf(symbol: ts.Symbol, checker: ts.TypeChecker, root: string): ApiMember[] {
  const [declaration] = symbol.declarations ?? [];
  if (declaration === undefined) return [];
  const tables: (ts.SymbolTable | undefined)[] = [];
  if (symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface)) {
    tables.push(symbol.members);
    if (symbol.flags & ts.SymbolFlags.Class) tables.push(symbol.exports);
  } else if (ts.isTypeAliasDeclaration(declaration) && ts.isTypeLiteralNode(declaration.type)) {
    tables.push(checker.getTypeAtLocation(declaration.type).symbol.members);
  }
  const source = relative(root, declaration.getSourceFile().fileName);
  const members: ApiMember[] = [];
  for (const table of tables) {
    table?.forEach((member) => {
      // Properties, methods and accessors: not type parameters, constructors or `prototype`.
      const property = (member.flags & ts.SymbolFlags.ClassMember) !== 0;
      if (!property || member.name === 'prototype' || !isPublic(member)) return;
      const documentation = ts.displayPartsToString(member.getDocumentationComment(checker));
      members.push({
        owner: symbol.name,
        name: member.name,
        source,
        documentation: documentation.trim(),
      });
    });
  }
  return members;
}

/** Whether a member is neither `private` nor `#private`: a user can reach it. */
function isPublic(member: ts.Symbol): boolean {
  return (member.declarations ?? []).every(
    (d) =>
      (ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Private) === 0 &&
      !(
        (d as ts.NamedDeclaration).name !== undefined &&
        ts.isPrivateIdentifier((d as ts.NamedDeclaration).name as ts.Node)
      ),
  );
}

/** A declaration's home: the source file and the name it is declared under there. */
interface Located {
  readonly file: ts.SourceFile;
  readonly name: string;
}

function locationKey({ file, name }: Located): string {
  return `${file.fileName}#${name}`;
}

/** The module and original name of `name` when `statement` imports or re-exports it. */
function importedAs(
  statement: ts.Statement,
  name: string,
): { readonly from: string; readonly name: string } | undefined {
  let bindings: ts.NamedImportBindings | ts.NamedExportBindings | undefined;
  if (ts.isImportDeclaration(statement)) bindings = statement.importClause?.namedBindings;
  else if (ts.isExportDeclaration(statement)) bindings = statement.exportClause;
  const specifier = (statement as ts.ImportDeclaration | ts.ExportDeclaration).moduleSpecifier;
  if (bindings === undefined || specifier === undefined || !ts.isStringLiteral(specifier)) {
    return undefined;
  }
  if (!ts.isNamedImports(bindings) && !ts.isNamedExports(bindings)) return undefined;
  const elements: readonly (ts.ImportSpecifier | ts.ExportSpecifier)[] = bindings.elements;
  const element = elements.find((e) => e.name.text === name);
  return element && { from: specifier.text, name: (element.propertyName ?? element.name).text };
}

/** The type names a declaration uses: type references, `extends`/`implements`, `typeof`. */
function typeNamesIn(node: ts.Node): string[] {
  const names: string[] = [];
  const leftmost = (name: ts.EntityName): string =>
    ts.isIdentifier(name) ? name.text : leftmost(name.left);
  const visit = (n: ts.Node): void => {
    if (ts.isTypeReferenceNode(n)) names.push(leftmost(n.typeName));
    else if (ts.isExpressionWithTypeArguments(n) && ts.isIdentifier(n.expression)) {
      names.push(n.expression.text);
    } else if (ts.isTypeQueryNode(n)) names.push(leftmost(n.exprName));
    ts.forEachChild(n, visit);
  };
  visit(node);
  return names;
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
