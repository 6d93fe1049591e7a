// What a stream-windows result message holds, decoded by its content type alone (result
// format 2): the part every reader shares, whichever protocol it reads the target with.
import { decode, decodeMulti } from '@msgpack/msgpack';

/** One output of a result: a key's aggregate over its window (epoch ms, end exclusive). */
export interface OutputSection {
  readonly type: 'output';
  readonly key: string | number | null;
  readonly start: number;
  readonly end: number;
  readonly count: number;
  readonly value: unknown;
  /** false on an early update of a window still open; absent on a final output. */
  readonly final?: false;
  /** true when a flush published this window before: the outputs add up. */
  readonly continues?: true;
}
/** Late values the job set aside (its `late('side')` policy), in offset order. */
export interface LateSection {
  readonly type: 'late';
  readonly values: readonly unknown[];
}
/** Source messages the job could not process; `message` is binary (base64 in JSON). */
export interface DeadLettersSection {
  readonly type: 'dead-letters';
  readonly records: readonly {
    readonly offset: string;
    readonly stage: string;
    readonly error: string;
    readonly message: Uint8Array | string;
  }[];
}
export type Section = OutputSection | LateSection | DeadLettersSection;

/** A message of the target, as every reader below hands it on. */
export interface ResultMessage {
  /** Its stream offset: keep `offset + 1n` with your side effects and resume from it. */
  readonly offset: bigint;
  /** The `sw-*` application properties (AMQP 0-9-1: headers), every value a string. */
  readonly properties: Readonly<Record<string, unknown>>;
  readonly sections: readonly Section[];
}

/** Applies one message: your side effects and `offset + 1n`, in one transaction. */
export type Apply = (message: ResultMessage) => Promise<void>;

/** A running reader: `done` rejects when a message could not be read or applied. */
export interface Reader {
  readonly done: Promise<void>;
  close(): Promise<void>;
}

// int64 values (bigints in the job's values) stay exact instead of becoming doubles.
const MSGPACK = { useBigInt64: true };

/** The sections of a message from its content type and body (one buffer per data section). */
export function sectionsOf(
  contentType: string | undefined,
  body: readonly Uint8Array[],
): Section[] {
  switch (contentType) {
    case 'application/msgpack': // pack 'single': one array; a 'batch' part: one map
      return body.flatMap((data) => {
        const value = decode(data, MSGPACK);
        return (Array.isArray(value) ? value : [value]) as Section[];
      });
    case 'application/json': // pack 'single', format 'json'
      return body.flatMap((data) => JSON.parse(Buffer.from(data).toString('utf8')) as Section[]);
    case 'application/msgpack-seq': // pack 'sections': maps one after another
      return body.flatMap((data) => [...decodeMulti(data, MSGPACK)] as Section[]);
    default:
      throw new Error(`not a stream-windows result: content type ${String(contentType)}`);
  }
}

/**
 * Applies messages one at a time, in delivery order: `deliver(read, settle)` queues one
 * (`read` decodes it, `settle` acknowledges it once applied). After a failure (of `apply`, or
 * the client's, given to `fail`) nothing more is applied and `done` rejects with it; `end()`
 * resolves `done`.
 */
export function inOrder(apply: Apply) {
  let chain = Promise.resolve();
  let end: () => void = () => undefined;
  let fail: (error: unknown) => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => {
    end = resolve;
    fail = reject;
  });
  const deliver = (read: () => ResultMessage, settle: () => void = () => undefined) => {
    chain = chain.then(() => apply(read())).then(settle);
    chain.catch(fail);
  };
  return { deliver, done, end: () => end(), fail: (error: unknown) => fail(error) };
}
