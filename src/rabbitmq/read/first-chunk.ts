import type { ClientParams } from 'rabbitmq-stream-js-client';
import { IDLE, orIdle } from '../../ports/idle-timeout.js';
import type { SourceChunk } from '../../ports/ports.js';
import { Subscription, type SubscriptionOptions } from './source-subscription.js';

/**
 * The first chunk a subscription from `options.from` delivers within `timeoutMs` (credit 1:
 * one chunk is all it asks for), then closed; undefined when none arrives in time (osiris
 * waits at the stream's end for the next write) or the subscription ends first. `timeoutMs`
 * also bounds each step of opening it.
 */
export async function firstChunk(
  params: ClientParams,
  options: Omit<SubscriptionOptions, 'credit' | 'connectTimeoutMs'>,
  timeoutMs: number,
): Promise<SourceChunk | undefined> {
  const subscription = await Subscription.open(params, {
    ...options,
    credit: 1,
    connectTimeoutMs: timeoutMs,
  });
  try {
    const chunk = await orIdle(subscription.take(), timeoutMs);
    return chunk === IDLE ? undefined : chunk;
  } finally {
    await subscription.close();
  }
}
