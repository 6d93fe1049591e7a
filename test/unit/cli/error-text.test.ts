// Errors as the command line prints them: an offset as the user typed it.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { errorText } from '../../../src/cli/error-text.js';

describe('errorText', () => {
  it('should print a bigint given to a ConfigError as the number typed, without n', () => {
    const error = new ConfigError('offset', 'must be the message the job stopped at', 4n);
    expect(error.message).toBe('offset must be the message the job stopped at, given: 4n');
    expect(errorText(error)).toBe('offset must be the message the job stopped at, given: 4');
  });

  it('should leave any other error as it is', () => {
    expect(errorText(new ConfigError('count', 'must be >= 1', 0))).toBe(
      'count must be >= 1, given: 0',
    );
    expect(errorText(new ConfigError('from', 'must be first', '4n'))).toBe(
      "from must be first, given: '4n'",
    );
    expect(errorText(new Error('broker unreachable: 4n'))).toBe('broker unreachable: 4n');
  });
});
