import { readFileSync } from 'node:fs';

/** Self time per function (and file:line) of a V8 .cpuprofile, top N. */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const [file, top = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file as string, 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map<string, number>();
profile.samples.forEach((id, i) => {
  const frame = (byId.get(id) as Node).callFrame;
  const name = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber + 1}`;
  self.set(name, (self.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);
for (const [name, micros] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
  console.log(`${((100 * micros) / total).toFixed(1).padStart(5)}%  ${name}`);
}
