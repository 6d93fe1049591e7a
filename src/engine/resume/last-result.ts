import { CodecError } from '../../codecs/codec-error.js';
import { RecoveryError } from '../../common/errors.js';
import type { ResultWhere, Target } from '../../ports/ports.js';
import { readStepId, writeId } from '../../result-format/publishing-id.js';
import {
  decodeResultHeader,
  joinOpenCountSlices,
  type ResultHeader,
} from '../../result-format/result-decoder.js';

/** The producer's last result as a restart finds it. */
export type LastResult =
  | { readonly kind: 'read'; readonly header: ResultHeader }
  | { readonly kind: 'missing' }
  | { readonly kind: 'unreadable'; readonly reason: string };

/**
 * The producer's result under publishing id `last`: one read (looking first where `where`
 * says) and one decode of its header.
 */
export async function readLastResult(
  target: Target,
  last: bigint,
  where: ResultWhere,
): Promise<LastResult> {
  const bytes = await target.readResult(last, where);
  if (bytes === undefined) return { kind: 'missing' };
  try {
    return { kind: 'read', header: decodeResultHeader(bytes) };
  } catch (cause) {
    if (!(cause instanceof CodecError)) throw cause;
    return { kind: 'unreadable', reason: cause.message };
  }
}

/**
 * The last result's header with its open counts whole, when its step wrote them in slices
 * (`ResultHeader.openCountSlices`, see `encodeStep`): slice j is on the first message of write
 * j of the step, read under that write's id (one read each, looking first where `where` says),
 * except the one the header's own message holds (the last write's: the last slice). A slice
 * the target does not hold, or that cannot be read, stops the job (RecoveryError naming its
 * id): the windows it names could not be rebuilt. `last`: the id the header was read under.
 */
export async function withOpenCounts(
  target: Target,
  last: bigint,
  header: ResultHeader,
  where: ResultWhere,
): Promise<ResultHeader> {
  const { openCountSlices: slices, ...rest } = header;
  if (slices === undefined) return header;
  const fail = (id: bigint, reason: string): RecoveryError =>
    new RecoveryError(target.stream, target.producer, id, reason);
  const step = readStepId(last);
  if (step.kind !== 'write' || rest.recovery === undefined) {
    throw fail(last, 'its result names open counts in slices, but no write of a step to find them');
  }
  const { count, slice: own } = slices;
  const texts: string[] = [];
  for (let index = 0; index < count; index++) {
    if (own !== undefined && own.index === index) {
      texts.push(own.text);
      continue;
    }
    // A write before the step's last: its id does not depend on how many writes there are.
    const id = writeId(step.offset, index, index + 2);
    const what = `its step's open count windows are written in ${count} slices, and slice ${index}`;
    const bytes = await target.readResult(id, where);
    if (bytes === undefined) {
      throw fail(
        id,
        `${what} is not in the target under that id (removed by retention, or the name was used by another job)`,
      );
    }
    let slice: { readonly index: number; readonly text: string } | undefined;
    try {
      slice = decodeResultHeader(bytes).openCountSlices?.slice;
    } catch (cause) {
      if (!(cause instanceof CodecError)) throw cause;
      throw fail(id, `${what} cannot be read: ${cause.message}`);
    }
    if (slice?.index !== index) throw fail(id, `${what} is not in the message under that id`);
    texts.push(slice.text);
  }
  try {
    return { ...rest, recovery: { ...rest.recovery, openCounts: joinOpenCountSlices(texts) } };
  } catch (cause) {
    if (!(cause instanceof CodecError)) throw cause;
    throw fail(
      last,
      `its open count windows, joined from ${count} slices, cannot be read: ${cause.message}`,
    );
  }
}
