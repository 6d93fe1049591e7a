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
  const { source, window, maxOutOfOrderness } = parts;
  const fields = maxOutOfOrderness === undefined ? { source, window } : parts;
  return new TextDecoder().decode(encodeCanonicalJson(fields));
}
