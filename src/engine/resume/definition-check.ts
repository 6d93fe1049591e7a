import { DefinitionChangeRefusedError, JobDefinitionError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { refusedChange } from '../../api/job-definition.js';
import type { Target } from '../../ports/ports.js';

/**
 * The job's definition its results carry (`sw-job`, see job-definition.ts). `allowChange`: a
 * last result of another definition is gone on from, with a warning, instead of stopping.
 */
export interface JobDefinitionCheck {
  readonly current: string;
  readonly allowChange: boolean;
}

/**
 * One job definition per producer name: a last result written by another definition stops
 * the job before it publishes anything, unless the change was asked for. A result without
 * one (written by an earlier version, or by `encodeResult` without it) is accepted.
 */
export function checkDefinition(
  config: {
    readonly definition: JobDefinitionCheck | undefined;
    readonly target: Target;
    readonly logger: Logger;
    readonly where: () => Record<string, unknown>;
  },
  found: string | undefined,
  last: bigint,
): void {
  const { definition, target, logger } = config;
  if (definition === undefined || found === undefined || found === definition.current) return;
  if (!definition.allowChange) {
    throw new JobDefinitionError(target.stream, target.producer, last, found, definition.current);
  }
  const refused = refusedChange(found, definition.current);
  if (refused !== undefined) {
    const { stream, producer } = target;
    throw new DefinitionChangeRefusedError(
      stream,
      producer,
      last,
      found,
      definition.current,
      refused,
    );
  }
  logger.warn(
    { ...config.where(), lastPublishingId: String(last), found, definition: definition.current },
    "the producer's last result was written by another job definition: going on from it with this one (allowDefinitionChange)",
  );
}
