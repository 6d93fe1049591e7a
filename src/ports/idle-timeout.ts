/** What `orIdle` gives when the wait outlasted its silence. */
export const IDLE: unique symbol = Symbol('idle');

/**
 * `work`, or IDLE if it has not settled within `ms`. The timer is cleared as soon as either
 * comes, and unref'd: a job stopping while it waits is not kept alive by it.
 */
export async function orIdle<T>(work: Promise<T>, ms: number): Promise<T | typeof IDLE> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<typeof IDLE>((resolve) => {
    timer = setTimeout(() => resolve(IDLE), ms);
    timer.unref();
  });
  try {
    return await Promise.race([work, idle]);
  } finally {
    clearTimeout(timer);
  }
}
