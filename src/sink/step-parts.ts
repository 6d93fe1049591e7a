import { ApplicationPropertyScan } from '../codecs/application-property-scan.js';
import { CodecError } from '../codecs/codec-error.js';
import { ResultProperty } from '../result-format/result-format.js';

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** The four properties of a result that say whether it leaves its producer's step open. */
const PART_PROPERTIES = new ApplicationPropertyScan([
  ResultProperty.producer,
  ResultProperty.format,
  ResultProperty.part,
  ResultProperty.parts,
]);

/**
 * Where a batch of a job's results may end: after a message past which every step whose parts
 * were read is whole. A step of several messages (`sw-part`/`sw-parts`: a 'batch' step's, or
 * any step's that took several writes) has its parts one after another per producer, other
 * producers' messages possibly between them; so a producer's step is open from a part that is
 * not its last until the producer's next message. Only four application properties are read
 * (the others skipped), the bodies never. A message that is not a result, or a result of one
 * message, opens nothing.
 */
export class OpenSteps {
  /** The producers whose last message read is a part of a step, not its last. */
  private readonly open = new Set<string>();

  /** Takes the stream's next message; true when every step read so far is whole after it. */
  add(bytes: Uint8Array): boolean {
    const producer = this.readPart(bytes);
    if (producer !== undefined) {
      if (producer.open) this.open.add(producer.name);
      // Its step's last part, or the producer's next result: its earlier step is not waited
      // for further (a step left unfinished is never continued after a later one).
      else this.open.delete(producer.name);
    }
    return this.open.size === 0;
  }

  /**
   * A result's producer, and whether it leaves a step open: a part that is not its step's
   * last. Undefined for a message that is not a result.
   */
  private readPart(bytes: Uint8Array): { name: string; open: boolean } | undefined {
    let found: unknown[];
    try {
      found = PART_PROPERTIES.read(bytes);
    } catch (error) {
      if (error instanceof CodecError) return undefined; // not an AMQP 1.0 message
      throw error;
    }
    const [name, format, part, parts] = found;
    if (typeof name !== 'string' || format === undefined) return undefined;
    const open =
      typeof part === 'string' &&
      typeof parts === 'string' &&
      DECIMAL.test(part) &&
      DECIMAL.test(parts) &&
      Number(part) < Number(parts) - 1;
    return { name, open };
  }
}
