import { encodeCanonicalJson } from '../codecs/canonical-json.js';

/**
 * What gives a job's publishing ids their meaning, as its results carry it (the `sw-job`
 * property): which stream the ids are offsets of, which window decides where steps end and
 * what a restart reopens, and for event-time windows the watermark's disorder. A producer
 * name belongs to one definition ("one job definition per producer name"): a job that finds
 * its producer's last result written by another one stops (JobDefinitionError). User
 * functions (key, reduce, filter, map) cannot be compared, so they are not part of it.
 */
export interface JobDefinitionParts {
  readonly source: string;
  /**
   * A job over several inputs (`mergeInputs`) only: their streams, in order (`source` names
   * the merge). Its publishing ids are positions of the merge of exactly these.
   */
  readonly inputs?: readonly string[];
  /** The window's description, e.g. "tumbling(1m)" (`describe()`). */
  readonly window: string;
  /** Event-time windows only: the job's `maxOutOfOrderness`, ms. */
  readonly maxOutOfOrderness?: number;
}

/**
 * The definition as canonical JSON (sorted keys, no whitespace), e.g.
 * `{"source":"sensors","window":"tumbling(1m)"}`: a function of the job's settings only, so a
 * replayed result keeps its bytes.
 */
export function jobDefinition(parts: JobDefinitionParts): string {
  const { source, inputs, window, maxOutOfOrderness } = parts;
  const fields =
    maxOutOfOrderness === undefined && inputs === undefined ? { source, window } : parts;
  return new TextDecoder().decode(encodeCanonicalJson(fields));
}

/**
 * Why a job of definition `current` cannot go on from a result of definition `found`, even
 * with `allowDefinitionChange`; undefined when it can (a new step window: the next step
 * begins after the last result, nothing was open). Publishing ids are offsets of the source,
 * so a new source would skip as many of its first messages. An event-time job restores the
 * windows open at the result by re-reading from their first offset: under another window
 * those offsets rebuild other windows, and one the re-read closes is never published; a step
 * job resumes after the result and drops them. (A step job's result, which holds no state to
 * restore, stops an event-time job with a RecoveryError already.)
 * A result property that is not a definition's JSON is not judged (nothing to compare).
 */
export function refusedChange(found: string, current: string): string | undefined {
  const was = parseDefinition(found);
  const now = parseDefinition(current);
  if (was === undefined || now === undefined) return undefined;
  if (was.inputs !== now.inputs) {
    return `its publishing ids are merged positions of the inputs ${was.inputs ?? 'none'}, not of ${now.inputs ?? 'none'}`;
  }
  if (was.source !== now.source) {
    return `its publishing ids are offsets of '${String(was.source)}', not of '${String(now.source)}'`;
  }
  if (was.eventTime) {
    return 'the windows open at that result would be lost or rebuilt wrong after an event-time window';
  }
  return undefined;
}

function parseDefinition(
  text: string,
): { source: unknown; inputs: string | undefined; eventTime: boolean } | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || !('source' in parsed)) return undefined;
    // The list as its JSON, to compare: order and names both count.
    const inputs = 'inputs' in parsed ? JSON.stringify(parsed.inputs) : undefined;
    return { source: parsed.source, inputs, eventTime: 'maxOutOfOrderness' in parsed };
  } catch {
    return undefined;
  }
}
