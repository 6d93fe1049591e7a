import {
  concatMap,
  first,
  from,
  groupBy,
  map,
  mergeMap,
  range,
  reduce,
  scan,
  share,
  toArray,
  windowCount,
  type Observable,
} from 'rxjs';
import type { SourceChunk } from '../../src/ports/ports.js';
import type { CorpusShape, Reading } from '../corpus.js';
import { MessageDecoder } from './decode.js';
import {
  countOf,
  SESSION_GAP_MS,
  TUMBLING_MS,
  type WindowDigest,
  type WindowKind,
} from './window-kinds.js';

interface Event {
  readonly reading: Reading;
  readonly time: number;
}

interface KeyResult {
  readonly count: number;
  readonly value: number;
}

/**
 * The peer: the same job written with RxJS's idiomatic operators — messages of each chunk
 * through `map(decode)`, windows split by `groupBy` on the window (with a duration that ends
 * a window's group when a later window starts) or by `windowCount`, then per window
 * `groupBy(sensor)` + `reduce` (keeping the latest value for compaction) + `toArray`. Runs synchronously:
 * `from(array)` emits everything during `subscribe`.
 */
export function runRxjs(
  kind: WindowKind,
  shape: CorpusShape,
  chunks: readonly SourceChunk[],
): WindowDigest[] {
  const decoder = new MessageDecoder();
  const events$ = from(chunks).pipe(
    concatMap((chunk) => {
      decoder.use(chunk);
      return range(0, chunk.count).pipe(
        map((i): Event => ({ reading: decoder.decode(i), time: decoder.time })),
      );
    }),
  );
  const windows$ = splitWindows(kind, shape, events$);
  const digests: WindowDigest[] = [];
  windows$
    .pipe(
      mergeMap((window$) =>
        window$.pipe(
          groupBy((event) => event.reading.sensor),
          mergeMap((key$) =>
            kind === 'compaction'
              ? key$.pipe(
                  reduce(
                    (latest, event) => ({ count: latest.count + 1, value: event.reading.value }),
                    {
                      count: 0,
                      value: 0,
                    },
                  ),
                )
              : key$.pipe(
                  reduce(
                    (sum, event) => ({
                      count: sum.count + 1,
                      value: sum.value + event.reading.value,
                    }),
                    {
                      count: 0,
                      value: 0,
                    } as KeyResult,
                  ),
                ),
          ),
          toArray(),
        ),
      ),
    )
    .subscribe((outputs) => digests.push(digestOf(outputs)));
  // The engine keeps the last window open (it is re-read after a restart); RxJS closes it on
  // completion. Drop it so that both report the same windows.
  if (digests.length > 0) digests.pop();
  return digests;
}

function splitWindows(
  kind: WindowKind,
  shape: CorpusShape,
  events$: Observable<Event>,
): Observable<Observable<Event>> {
  switch (kind) {
    case 'count':
    case 'compaction':
      return events$.pipe(windowCount(countOf(shape)));
    case 'tumbling-1m':
      return byWindowId(
        events$.pipe(map((event) => ({ event, id: event.time - (event.time % TUMBLING_MS) }))),
      );
    case 'session':
      // The session a message belongs to depends on the ones before it: state lives in `scan`.
      return byWindowId(
        events$.pipe(
          scan(
            (session, event) =>
              event.time - session.latest > SESSION_GAP_MS
                ? { event, id: session.id + 1, latest: event.time }
                : { event, id: session.id, latest: Math.max(session.latest, event.time) },
            { event: undefined as unknown as Event, id: 0, latest: -Infinity },
          ),
        ),
      );
  }
}

/** One group per window id, completed when a message of a later window arrives. */
function byWindowId(
  tagged$: Observable<{ event: Event; id: number }>,
): Observable<Observable<Event>> {
  const shared$ = tagged$.pipe(share());
  return shared$.pipe(
    groupBy((tagged) => tagged.id, {
      element: (tagged) => tagged.event,
      duration: (window$) => shared$.pipe(first((tagged) => tagged.id !== window$.key)),
    }),
  );
}

function digestOf(outputs: readonly KeyResult[]): WindowDigest {
  let total = 0;
  let messages = 0;
  for (const output of outputs) {
    total += output.value;
    messages += output.count;
  }
  return { keys: outputs.length, messages, total };
}
