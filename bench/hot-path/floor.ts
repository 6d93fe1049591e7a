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

interface KeyState {
  count: number;
  value: number;
}

/**
 * The floor: one hand-written loop per window kind with the engine's decoding and a Map per
 * window, and nothing else — no ports, no late or error policy, no offsets, no generic
 * assigner, trigger or aggregator calls. What the engine cannot beat.
 */
export function runFloor(
  kind: WindowKind,
  shape: CorpusShape,
  chunks: readonly SourceChunk[],
): WindowDigest[] {
  switch (kind) {
    case 'tumbling-1m':
      return floorLoop(chunks, (time, state) => {
        const start = time - (time % TUMBLING_MS);
        if (state.messages > 0 && start === state.mark) return false;
        state.mark = start;
        return state.messages > 0;
      });
    case 'session':
      return floorLoop(chunks, (time, state) => {
        const ends = state.messages > 0 && time - state.mark > SESSION_GAP_MS;
        if (time > state.mark || state.messages === 0) state.mark = time;
        return ends;
      });
    case 'count':
    case 'compaction': {
      const n = countOf(shape);
      return floorLoop(chunks, null, n, kind === 'compaction');
    }
  }
}

/** Window bookkeeping: `mark` is the window start (tumbling) or latest event time (session). */
interface Window {
  messages: number;
  mark: number;
}

/**
 * `endsBefore` says whether `time` starts a new window (updating `mark`); count windows pass
 * null and end after `n` messages. Written once, not four times, since V8 inlines the
 * monomorphic closure each kind passes.
 */
function floorLoop(
  chunks: readonly SourceChunk[],
  endsBefore: ((time: number, window: Window) => boolean) | null,
  n = Infinity,
  keepLatest = false,
): WindowDigest[] {
  const decoder = new MessageDecoder();
  const digests: WindowDigest[] = [];
  const window: Window = { messages: 0, mark: 0 };
  let keys = new Map<string, KeyState>();
  for (const chunk of chunks) {
    decoder.use(chunk);
    for (let i = 0; i < chunk.count; i++) {
      const reading: Reading = decoder.decode(i);
      if (endsBefore !== null && endsBefore(decoder.time, window)) {
        digests.push(digestOf(keys, window.messages));
        keys = new Map();
        window.messages = 0;
      }
      const state = keys.get(reading.sensor);
      if (state === undefined) {
        keys.set(reading.sensor, { count: 1, value: reading.value });
      } else {
        state.count++;
        state.value = keepLatest ? reading.value : state.value + reading.value;
      }
      window.messages++;
      if (window.messages === n) {
        digests.push(digestOf(keys, window.messages));
        keys = new Map();
        window.messages = 0;
      }
    }
  }
  return digests;
}

function digestOf(keys: Map<string, KeyState>, messages: number): WindowDigest {
  let total = 0;
  for (const state of keys.values()) total += state.value;
  return { keys: keys.size, messages, total };
}
