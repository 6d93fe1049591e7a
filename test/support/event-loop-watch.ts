// Says which test held its worker's event loop for long. vitest's worker waits at most 60 s
// (fixed in vitest 3) for the main process to answer its task updates, and a reply that
// arrives while the loop is held is read only after that timer fired: the run then fails with
// `Timeout calling "onTaskUpdate"` and names no test. This line names it.
import { afterEach } from 'vitest';

/** A hold of the event loop this long is reported, ms. */
const REPORT_AFTER_MS = 10_000;
const BEAT_MS = 250;

let lastBeat = performance.now();
/** The longest gap between two beats since the last test ended. */
let longestGap = 0;
setInterval(() => {
  const now = performance.now();
  longestGap = Math.max(longestGap, now - lastBeat);
  lastBeat = now;
}, BEAT_MS).unref();

afterEach((context) => {
  // A hold still going on when the test ended shows as the time since the last beat.
  const now = performance.now();
  const heldMs = Math.max(longestGap, now - lastBeat) - BEAT_MS;
  longestGap = 0;
  lastBeat = now;
  if (heldMs >= REPORT_AFTER_MS) {
    console.warn(
      `event loop held for ${Math.round(heldMs)} ms during '${context.task.name}' ` +
        `(${context.task.file.name})`,
    );
  }
});
