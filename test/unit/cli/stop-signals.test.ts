// SIGINT and SIGTERM as a command's normal end, sent to this very process.
import { once } from 'node:events';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { stopSignals } from '../../../src/cli/stop-signals.js';

describe('stopSignals', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'should abort on a first %s and exit 0 at once on a second one',
    async (name) => {
      const exit = vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
      const stopping = stopSignals();
      onTestFinished(() => {
        stopping.dispose();
        exit.mockRestore();
      });
      process.kill(process.pid, name);
      await once(stopping.signal, 'abort');
      expect(exit).not.toHaveBeenCalled();
      // The copy a parent forwards (npm exec, a supervisor), or a second Ctrl-C.
      const second = once(process, name);
      process.kill(process.pid, name);
      await second;
      expect(exit.mock.calls).toEqual([[0]]);
    },
  );

  it('should leave the signals alone once disposed', () => {
    const before = process.listenerCount('SIGINT');
    stopSignals().dispose();
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});
