import type { PartitionedSource, Source } from '../ports/ports.js';
import type { SingleActiveSourceOptions } from './single-active-source.js';
import { asPromise } from '../common/as-promise.js';

/** What the broker hands this: a source per partition stream, plain or single active. */
export interface PartitionSources {
  partitions(superStream: string): string[];
  source(
    stream: string,
    singleActive: SingleActiveSourceOptions | undefined,
  ): Source & {
    close?(): Promise<void>;
  };
}

/**
 * A super stream of the embedded broker as a partitioned job reads it
 * (`broker.superStreamSource(name, { singleActive: { name } })`): one source per partition in
 * partition order, each joining the same single active consumer group when one is named. A
 * partition's source is made once and kept across runs, so an instance keeps its place in
 * each group while it runs.
 */
export class MemoryPartitionedSource implements PartitionedSource {
  readonly group: string | undefined;
  private readonly made = new Map<string, Source & { close?(): Promise<void> }>();

  constructor(
    readonly superStream: string,
    private readonly singleActive: SingleActiveSourceOptions | undefined,
    private readonly broker: PartitionSources,
  ) {
    this.group = singleActive?.name;
  }

  partitions(): Promise<readonly Source[]> {
    return asPromise(() => {
      return this.broker.partitions(this.superStream).map((stream) => {
        const known = this.made.get(stream);
        if (known !== undefined) return known;
        const source = this.broker.source(stream, this.singleActive);
        this.made.set(stream, source);
        return source;
      });
    });
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.made.values()].map((source) => source.close?.() ?? Promise.resolve()),
    );
  }
}
