import { median, ratioSpread } from './measure.js';
import { runInChild } from './child.js';
import { ratioRange, throughput, type CaseResult } from './report.js';

/** What frame-assembly-probe.ts measures; see there for the method. */
export interface FrameAssemblyProbe {
  readonly frames: number;
  readonly bytes: number;
  /** Each router's time in each timed round. */
  readonly roundsMs: Readonly<Record<Router, readonly number[]>>;
  /** Bytes each router copied out of the socket reads. */
  readonly copiedBytes: Readonly<Record<Router, number>>;
}

type Router = 'assembler' | 'concat';

/**
 * Case 6, in a child process (a heap free of the other cases' garbage): cutting socket reads
 * into Deliver frames with the FrameAssembler (src/rabbitmq/socket-frames.ts: a frame that
 * spans reads is copied once, into a buffer sized from its header) against the router it
 * replaced (pending reads joined with Buffer.concat once enough bytes had come, which also
 * copied the rest of the completing read, and copied a second time when the size prefix
 * itself was split). Throughput is frames per second.
 */
export async function frameAssemblyCases(frames: number, repeats: number): Promise<CaseResult[]> {
  const probe = await runInChild<FrameAssemblyProbe>(
    new URL('./frame-assembly-probe.ts', import.meta.url),
    [String(frames), String(repeats)],
    [],
  );
  const concat = ratioSpread(probe.roundsMs.assembler, probe.roundsMs.concat);
  const values = (router: Router) => ({
    medianMs: median(probe.roundsMs[router]),
    copiedMB: probe.copiedBytes[router] / 1e6,
    copiedPercentOfBytes: (100 * probe.copiedBytes[router]) / probe.bytes,
  });
  return [
    {
      name: 'frame-assembly/assembler',
      kind: 'frames',
      ...throughput(probe.frames, probe.roundsMs.assembler),
      ratios: { concat: concat.median },
      values: { ...ratioRange('concat', concat), ...values('assembler') },
    },
    {
      name: 'frame-assembly/concat',
      kind: 'frames',
      ...throughput(probe.frames, probe.roundsMs.concat),
      ratios: {},
      values: values('concat'),
    },
  ];
}
