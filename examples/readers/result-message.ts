// What a stream-windows result message holds, decoded by its content type alone (result
// formats 2 and 3), and steps put together from their messages: the part every reader
// shares, whichever protocol it reads the target with.
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

/** A message of the target, as every reader below reads it. */
export interface ResultMessage {
  /** Its stream offset. */
  readonly offset: bigint;
  /** The `sw-*` application properties (AMQP 0-9-1: headers), every value a string. */
  readonly properties: Readonly<Record<string, unknown>>;
  readonly sections: readonly Section[];
}

/**
 * A job's step, whole, as every reader below hands it on: one message, or the parts
 * (`sw-part` 0..`sw-parts`-1) of a step of several messages, their sections in order.
 */
export interface ResultStep {
  /** `sw-producer` and `sw-last-offset`: together they name the step. */
  readonly producer: string;
  readonly lastOffset: bigint;
  /** The offset of its first message. */
  readonly offset: bigint;
  readonly messages: readonly ResultMessage[];
  readonly sections: readonly Section[];
  /**
   * Where to read on after this step: keep it with the step's side effects and resume from
   * it. The offset after its last message or, while another producer's step is still open,
   * that step's first message: steps read again from there were applied already (a
   * producer's steps come in increasing `sw-last-offset`: skip those up to its last applied).
   */
  readonly resumeFrom: bigint;
}

/** Applies one whole step: your side effects and `resumeFrom`, in one transaction. */
export type Apply = (step: ResultStep) => Promise<void>;

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
    case 'application/msgpack': // pack 'single': one array (per part too); 'batch': one map
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
 * Puts steps together from messages in offset order, by their properties alone
 * (docs/reference/wire-format.md, "Steps of several writes"): returns the step a message
 * completes, or undefined while its step is not whole. Other producers' messages may come
 * between a step's parts: they are gathered per producer.
 */
export function gatherSteps(): (message: ResultMessage) => ResultStep | undefined {
  const open = new Map<string, ResultMessage[]>(); // per producer: its step's parts so far
  return (message) => {
    const p = message.properties;
    const producer = String(p['sw-producer']);
    const part = Number(p['sw-part'] ?? 0); // a message without sw-part is a step of its own
    const parts = open.get(producer) ?? [];
    // A step begun before where this reading started was whole then: applied already.
    if (part > 0 && parts.length === 0) return undefined;
    const [first = message] = parts;
    if (part !== parts.length || p['sw-last-offset'] !== first.properties['sw-last-offset']) {
      throw new Error(`offset ${message.offset}: not the next part of ${producer}'s step`);
    }
    parts.push(message);
    if (part < Number(p['sw-parts'] ?? 1) - 1) {
      open.set(producer, parts); // not whole yet: wait for its next part, however long it takes
      return undefined;
    }
    open.delete(producer);
    // Where to read on: after this step, or at the first message of a step still open.
    const resumeFrom = [...open.values()]
      .map((o) => (o[0] as ResultMessage).offset)
      .reduce((a, b) => (a < b ? a : b), message.offset + 1n);
    return {
      producer,
      lastOffset: BigInt(String(p['sw-last-offset'])),
      offset: first.offset,
      messages: parts,
      sections: parts.flatMap((m) => m.sections),
      resumeFrom,
    };
  };
}

/**
 * Applies whole steps one at a time, in delivery order: `deliver(read, settle)` queues a
 * message (`read` decodes it, `settle` acknowledges it once its step is applied, or once it is
 * kept until its step is whole). After a failure (of `apply`, or the client's, given to
 * `fail`) nothing more is applied and `done` rejects with it; `end()` resolves `done`.
 */
export function inOrder(apply: Apply) {
  const gather = gatherSteps();
  let chain = Promise.resolve();
  let end: () => void = () => undefined;
  let fail: (error: unknown) => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => {
    end = resolve;
    fail = reject;
  });
  const deliver = (read: () => ResultMessage, settle: () => void = () => undefined) => {
    chain = chain
      .then(async () => {
        const step = gather(read());
        if (step !== undefined) await apply(step);
      })
      .then(settle);
    chain.catch(fail);
  };
  return { deliver, done, end: () => end(), fail: (error: unknown) => fail(error) };
}
