import { ProducerRenamedError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Target } from '../../ports/ports.js';

/**
 * Asked when the producer's last id is 0: if its former name published on the target, the
 * job was upgraded from that name, and starting would read the source again from its first
 * offset and publish every result a second time. One query; a scan only when the former
 * name did publish (whether this producer's 0 is "never" or "offset 0"). A former name whose
 * only result is offset 0's answers 0 too and is not caught: at most that one result twice.
 */
export class FormerProducerCheck {
  /** Whether this loop told that its target cannot answer for its former producer name. */
  private uncheckedLogged = false;

  constructor(
    private readonly config: {
      readonly formerProducer: string | undefined;
      readonly target: Target;
      readonly logger: Logger;
      readonly where: () => Record<string, unknown>;
    },
  ) {}

  async check(hasPublished: () => Promise<boolean>): Promise<void> {
    const { formerProducer, target, logger } = this.config;
    if (formerProducer === undefined) return;
    if (target.lastPublishingIdOf === undefined) {
      // A wrapper that does not forward it turns the check off: say so, once per loop.
      if (!this.uncheckedLogged) {
        this.uncheckedLogged = true;
        logger.warn(
          { ...this.config.where(), formerProducer },
          `the target has no lastPublishingIdOf, so whether the former producer name '${formerProducer}' published is not checked: if it did, this job reads its source again from the first offset and publishes every result a second time`,
        );
      }
      return;
    }
    const formerLast = await target.lastPublishingIdOf(formerProducer);
    if (formerLast === 0n || (await hasPublished())) return;
    throw new ProducerRenamedError(target.stream, target.producer, formerProducer, formerLast);
  }
}
