// SIGINT and SIGTERM as a command's normal end, delivered to this process's listeners (as
// Node does on a real signal, without one: no signal reaches the test worker itself).
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { stopSignals } from '../../../src/cli/stop-signals.js';

describe('stopSignals', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'should abort on a first %s and exit 0 at once on a second one',
    (name) => {
      const exit = vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
      const stopping = stopSignals();
      onTestFinished(() => {
        stopping.dispose();
        exit.mockRestore();
      });
      process.emit(name, name);
      expect(stopping.signal.aborted).toBe(true);
      expect(exit).not.toHaveBeenCalled();
      // The copy a parent forwards (npm exec, a supervisor), or a second Ctrl-C.
      process.emit(name, name);
      expect(exit.mock.calls).toEqual([[0]]);
    },
  );

  it('should leave the signals alone once disposed', () => {
    const before = ['SIGINT', 'SIGTERM'].map((name) => process.listenerCount(name));
    stopSignals().dispose();
    expect(['SIGINT', 'SIGTERM'].map((name) => process.listenerCount(name))).toEqual(before);
  });
});
