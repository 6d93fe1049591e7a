/**
 * Both answers, or the first failure once both have settled: a question still under way
 * would hold its connection open after the command has reported the other's failure.
 */
export async function settled<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [first, second] = await Promise.allSettled([a, b]);
  if (first.status === 'rejected') throw first.reason;
  if (second.status === 'rejected') throw second.reason;
  return [first.value, second.value];
}
