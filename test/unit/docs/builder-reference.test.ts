// The builder reference (docs/reference/builder.md) lists every public method of the builders
// and every option of `.to()` / `.toPartitions()`, read from src/dsl/pipeline.ts itself: the
// hand-written table once drifted from the code, and this keeps it from drifting again.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT, readDoc } from './doc-blocks.js';

const BUILDERS = ['PipelineBuilder', 'AggregationBuilder', 'TransformBuilder'];
const OPTIONS = ['TargetOptions', 'FlushOptions', 'DeadLetterOptions'];

/** The public methods of the builder classes and the options they take, from the source. */
function surface(source: string): { methods: string[]; options: string[] } {
  const file = ts.createSourceFile('pipeline.ts', source, ts.ScriptTarget.ES2022, true);
  const methods = new Set<string>();
  const options = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) && BUILDERS.includes(node.name?.text ?? '')) {
      for (const member of node.members) {
        const hidden = ts
          .getModifiers(member as ts.MethodDeclaration)
          ?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword);
        if (ts.isMethodDeclaration(member) && !hidden) methods.add(member.name.getText(file));
        // `.toPartitions()` takes options of its own beside TargetOptions.
        if (ts.isMethodDeclaration(member) && member.name.getText(file) === 'toPartitions') {
          member.forEachChild(function literals(child): void {
            if (ts.isTypeLiteralNode(child)) {
              for (const m of child.members)
                if (m.name !== undefined) options.add(m.name.getText(file));
            }
            child.forEachChild(literals);
          });
        }
      }
    }
    if (ts.isInterfaceDeclaration(node) && OPTIONS.includes(node.name.text)) {
      for (const member of node.members)
        if (member.name !== undefined) options.add(member.name.getText(file));
    }
    node.forEachChild(visit);
  };
  visit(file);
  return { methods: [...methods], options: [...options] };
}

/** What the reference lacks of `source`'s surface. */
function undocumented(source: string, reference: string): string[] {
  const { methods, options } = surface(source);
  return [
    ...methods.filter((m) => !reference.includes(`\`.${m}(`)).map((m) => `.${m}()`),
    ...options.filter((o) => !new RegExp(`\\b${o}\\b`).test(reference)).map((o) => `option ${o}`),
  ];
}

const PIPELINE = readFileSync(join(ROOT, 'src/dsl/pipeline.ts'), 'utf8');
const REFERENCE = readDoc('docs/reference/builder.md');

describe('the builder reference', () => {
  it('lists every public method of the builders and every option, as the source has them', () => {
    const { methods, options } = surface(PIPELINE);
    expect(methods).toEqual(
      expect.arrayContaining([
        'decode',
        'hopping',
        'maxOutOfOrderness',
        'emit',
        'to',
        'toPartitions',
      ]),
    );
    expect(methods).not.toContain('withStage');
    expect(options).toEqual(
      expect.arrayContaining(['route', 'logger', 'flush', 'maxDeadLetters', 'idleMs', 'name']),
    );
    expect(undocumented(PIPELINE, REFERENCE)).toEqual([]);
  });

  it('notices a method or an option the reference leaves out', () => {
    expect(undocumented(PIPELINE, REFERENCE.replaceAll('`.hopping(', '`hopping('))).toEqual([
      '.hopping()',
    ]);
    const added = PIPELINE.replace(
      '  readonly logger?: Logger;',
      '  readonly logger?: Logger;\n  readonly newOption?: number;',
    );
    expect(undocumented(added, REFERENCE)).toEqual(['option newOption']);
  });
});
