import type { ReadStart } from './ports.js';

/**
 * The offset a `ReadStart` names, asking it when it is a function: the one place an adapter
 * turns the port's "asked when delivery may begin" into a start (at once for a plain source,
 * at activation for a single active consumer).
 */
export async function resolveReadStart(from: ReadStart): Promise<bigint | 'first'> {
  return typeof from === 'function' ? from() : from;
}
