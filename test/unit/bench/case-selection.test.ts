import { describe, expect, it } from 'vitest';
import { CASE_KINDS, selectCases } from '../../../bench/case-selection.js';

describe('npm run bench -- <case>...', () => {
  it('should run every case, as a full run, when none is named', () => {
    expect(selectCases([])).toEqual({ kinds: CASE_KINDS, full: true });
  });

  it('should run only the named cases, in the full run order, as a partial run', () => {
    expect(selectCases(['e2e', 'hot-path'])).toEqual({ kinds: ['hot-path', 'e2e'], full: false });
  });

  it('should refuse an unknown name, listing the cases', () => {
    expect(() => selectCases(['hot-path', 'hotpath'])).toThrow(
      `unknown bench case 'hotpath'; the cases are ${CASE_KINDS.join(', ')}`,
    );
  });
});
