import { describe, expect, it } from 'vitest';
import { CASE_KINDS, OPT_IN_KINDS, selectCases } from '../../../bench/case-selection.js';

describe('npm run bench -- <case>...', () => {
  it('should run every case, as a full run, when none is named', () => {
    expect(selectCases([])).toEqual({ kinds: CASE_KINDS, full: true });
  });

  it('should run only the named cases, in the full run order, as a partial run', () => {
    expect(selectCases(['e2e', 'hot-path'])).toEqual({ kinds: ['hot-path', 'e2e'], full: false });
  });

  it('should run a case of OPT_IN_KINDS only when named, never as a full run', () => {
    expect(OPT_IN_KINDS).toContain('large-steps');
    expect(selectCases([]).kinds).not.toContain('large-steps');
    expect(selectCases(['large-steps'])).toEqual({ kinds: ['large-steps'], full: false });
    expect(selectCases([...CASE_KINDS, 'large-steps'])).toEqual({
      kinds: [...CASE_KINDS, 'large-steps'],
      full: false,
    });
  });

  it('should refuse an unknown name, listing the cases', () => {
    expect(() => selectCases(['hot-path', 'hotpath'])).toThrow(
      `unknown bench case 'hotpath'; the cases are ${CASE_KINDS.join(', ')}; ` +
        `run only when named: ${OPT_IN_KINDS.join(', ')}`,
    );
  });
});
