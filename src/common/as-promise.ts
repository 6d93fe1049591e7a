/**
 * Runs `work` and answers as an `async` function would: with its result, or with what it
 * throws as a rejection, never a synchronous throw. For a synchronous body behind an interface
 * that returns a Promise (the embedded broker's port methods: a deleted stream rejects, as on
 * RabbitMQ); an `async` function with no `await` did the same, unsaid.
 */
export function asPromise<T>(work: () => T): Promise<T> {
  return new Promise<T>((resolve) => {
    resolve(work());
  });
}
