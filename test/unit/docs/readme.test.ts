// The README is the page a newcomer reads in five minutes (issue 21): short, with the install
// command, a first job that runs, and the repository's own commands, which must exist.
import { describe, expect, it } from 'vitest';
import { extractBlocks, readDoc } from './doc-blocks.js';

const README = readDoc('README.md');
const scripts = (JSON.parse(readDoc('package.json')) as { scripts: Record<string, string> })
  .scripts;

describe('the README', () => {
  it('stays under 250 lines', () => {
    expect(README.split('\n').length).toBeLessThan(250);
  });

  it('says how to install, runs a first job, and shows the same job on RabbitMQ', () => {
    expect(README).toContain('npm install stream-windows');
    const blocks = extractBlocks('README.md', README);
    expect(
      blocks.filter((b) => b.run && b.code.includes("from 'stream-windows/memory'")),
    ).toHaveLength(1);
    const rabbit = blocks.filter((b) => b.code.includes("from 'stream-windows/rabbitmq'"));
    expect(rabbit).toHaveLength(1);
    expect(rabbit[0]?.code).toMatch(/\.producer\(/);
    expect(rabbit[0]?.code).toMatch(/readResults/);
  });

  it("gives the repository's commands, each a script of package.json", () => {
    for (const command of ['npm install && npm start', 'npm test', 'npm run test:unit']) {
      expect(README).toContain(command);
    }
    expect(Object.keys(scripts)).toEqual(expect.arrayContaining(['start', 'test', 'test:unit']));
  });

  it('links into the docs: the index, and every section of the tree', () => {
    for (const page of [
      'docs/README.md',
      'docs/concepts/',
      'docs/guides/',
      'docs/reference/',
      'docs/operations/',
      'docs/internals/',
    ]) {
      expect(README).toContain(`](${page}`);
    }
  });
});
