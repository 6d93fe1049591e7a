/**
 * Answers a port method of the embedded broker as a broker call ends: with the answer, or with
 * its error (a deleted stream, a closed target) as a rejection, never a synchronous throw, as
 * the RabbitMQ adapter's do. (An `async` function with no `await` did the same, unsaid.)
 */
export function brokerCall<T>(answer: () => T): Promise<T> {
  return new Promise<T>((resolve) => {
    resolve(answer());
  });
}
