import { ConfigError } from '../common/errors.js';
import type { FaultPoint } from './errors.js';

/**
 * A declarative, deterministic fault: "on the `atPublish`-th publish to `stream` (by
 * `producer`, if given), counted from when the fault is injected, fail at `point`".
 *
 * - `'before-publish'`: the publish rejects with `SimulatedCrash`; nothing is stored.
 * - `'after-publish'`: the write is stored (or discarded as a duplicate), then the publish
 *   rejects with `SimulatedCrash`: the process died before the confirm arrived.
 * - `'after-confirm'`: the write is stored and the publish resolves; the process dies right
 *   after, so the target's NEXT call rejects with `SimulatedCrash`.
 * - `'lose-confirm'`: the write is stored, then the publish rejects with a retriable
 *   `PublishError` 'confirm lost', as the RabbitMQ adapter does when a confirm times out.
 *   The target publishes again once `lastPublishingId()` has answered (the Target contract).
 * - `'refuse-publish'`: nothing is stored and the publish rejects with a retriable
 *   `PublishError` (code 6, stream not available), as RabbitMQ answers while a stream has no
 *   leader. With `times`, a job retries that long: a persistent retriable fault.
 *
 * After the three crash points the target is dead: every later call on it rejects with
 * `SimulatedCrash`, so a pipelined publish issued after the crash is never stored. A restart
 * builds a new target. `onFire` runs synchronously when the fault fires, before the publish
 * settles, e.g. to abort the job's AbortSignal so its source stops too.
 */
export interface FaultSpec {
  /** The stream whose publishes are counted. */
  readonly stream: string;
  /** Count only this producer's publishes; absent: every producer's. */
  readonly producer?: string;
  /** 1 = the next matching publish. */
  readonly atPublish: number;
  /** Where the publish fails: see the list above. */
  readonly point: FaultPoint;
  /**
   * How many matching publishes in a row it fails, from the `atPublish`-th (default 1;
   * `Infinity`: every one until `clearFaults()`). Above 1 only for 'lose-confirm' and
   * 'refuse-publish': after the other points the target is dead.
   */
  readonly times?: number;
  /** Runs synchronously when the fault fires, before the publish settles. */
  readonly onFire?: () => void;
}

/** An injected fault; `fired` tells a test whether the run reached it. */
export class Fault {
  private seen = 0;
  private firings = 0;
  private readonly times: number;

  constructor(
    /** The fault as injected. */
    readonly spec: FaultSpec,
  ) {
    if (!Number.isSafeInteger(spec.atPublish) || spec.atPublish < 1) {
      throw new ConfigError('atPublish', 'must be an integer >= 1', spec.atPublish);
    }
    const { times = 1 } = spec;
    if (!(times === Infinity || (Number.isSafeInteger(times) && times >= 1))) {
      throw new ConfigError('times', 'must be an integer >= 1 or Infinity', times);
    }
    if (times > 1 && spec.point !== 'lose-confirm' && spec.point !== 'refuse-publish') {
      throw new ConfigError(
        'times',
        `must be 1 at '${spec.point}': the target is dead after it fires once`,
        times,
      );
    }
    this.times = times;
  }

  /** Whether the run reached the fault's publish and the fault fired. */
  get fired(): boolean {
    return this.firings > 0;
  }

  /** Whether it fired as many times as it was asked to: it counts nothing more. */
  get spent(): boolean {
    return this.firings >= this.times;
  }

  /** Counts a publish; true when this is one the fault fires at. */
  count(stream: string, producer: string): boolean {
    if (this.spent || stream !== this.spec.stream) return false;
    if (this.spec.producer !== undefined && producer !== this.spec.producer) return false;
    this.seen++;
    return this.seen >= this.spec.atPublish;
  }

  /** Counts the firing and runs `onFire`; returns where the publish fails. */
  fire(): FaultPoint {
    this.firings++;
    this.spec.onFire?.();
    return this.spec.point;
  }
}

/**
 * The faults pending on a broker. Every pending fault counts every matching publish; when two
 * come due on the same publish, the one injected first fires and the other is spent unfired.
 */
export class FaultPlan {
  private pending: Fault[] = [];

  add(spec: FaultSpec): Fault {
    const fault = new Fault(spec);
    this.pending.push(fault);
    return fault;
  }

  clear(): void {
    this.pending = [];
  }

  /**
   * The point at which this publish fails, if any fault fires on it; `beforeFiring` runs first
   * when one does (before its `onFire`).
   */
  onPublish(
    stream: string,
    producer: string,
    beforeFiring: () => void = () => undefined,
  ): FaultPoint | undefined {
    const due = this.pending.filter((fault) => fault.count(stream, producer));
    if (due[0] !== undefined) beforeFiring();
    const point = due[0]?.fire();
    // A repeating fault that fired stays until spent; one due with it is spent unfired.
    this.pending = this.pending.filter(
      (fault) => !fault.spent && (fault === due[0] || !due.includes(fault)),
    );
    return point;
  }
}
