import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as main from '../../../src/index.js';
import * as memory from '../../../src/memory/index.js';
import * as rabbitmq from '../../../src/rabbitmq/index.js';
import * as metrics from '../../../src/metrics/index.js';
import * as cli from '../../../src/cli/index.js';

/** One instance of each error class the entry points export. */
const INSTANCES: Readonly<Record<string, () => main.StreamWindowsError>> = {
  StreamWindowsError: () => new main.StreamWindowsError('x'),
  ClientInternalsError: () => new main.ClientInternalsError('x'),
  ConfigError: () => new main.ConfigError('p', 'must be', 1),
  ProcessingError: () => new main.ProcessingError('s', 1n, 'decode', new Error('x')),
  MultiSectionMessageError: () => new main.MultiSectionMessageError(2),
  ResultMessageError: () => new main.ResultMessageError('2', new Error('x')),
  OutputTooLargeError: () => new main.OutputTooLargeError('s', 1n, 2n, 3, 2),
  DeadLetterLimitError: () => new main.DeadLetterLimitError('s', 1n, 2n, 1, 'map', 'x'),
  SchemaValidationError: () => new main.SchemaValidationError(['x']),
  PublishError: () => new main.PublishError('s', 1n, true, 'x'),
  ResumePointError: () => new main.ResumePointError('s', 'p', false, 2, 'x'),
  RecoveryError: () => new main.RecoveryError('s', 'p', 7n, 'x'),
  JobDefinitionError: () => new main.JobDefinitionError('s', 'p', 7n, 'a', 'b'),
  ProducerRenamedError: () => new main.ProducerRenamedError('s', 'p@x', 'p-x', 7n),
  DefinitionChangeRefusedError: () =>
    new main.DefinitionChangeRefusedError('s', 'p', 7n, 'a', 'b', 'x'),
  SourceError: () => new main.SourceError('s', true, 'x'),
  SourceDeactivatedError: () => new main.SourceDeactivatedError('s', 'g', 1n),
  RetentionGapError: () => new main.RetentionGapError('s', 1n, 5n),
  BrokerUnavailableError: () => new main.BrokerUnavailableError('x'),
  AccessRefusedError: () => new main.AccessRefusedError('h:1', 8, 'x'),
  NotAResultError: () => new main.NotAResultError('s', 1n, 'x'),
  PartitionWorkerError: () => new main.PartitionWorkerError(1, 2, 's', new Error('x')),
  SinkError: () => new main.SinkError('k', 's', 1n, 2n, 'apply', false, new Error('x')),
  SinkTableError: () => new main.SinkTableError('t', 'c', 'type bigint', 'type text'),
  OutboxOrderError: () => new main.OutboxOrderError('outbox', 'k', new Error('23502')),
  RelayError: () =>
    new main.RelayError(
      'r',
      'outbox',
      's',
      { id: 1n, txid: 750n },
      'publish',
      false,
      new Error('x'),
    ),
  CodecError: () => new main.CodecError('x', 0),
  StreamNotFoundError: () => new memory.StreamNotFoundError('s'),
  SingleActiveMemberLostError: () =>
    new memory.SingleActiveMemberLostError('s', 'g', 'resumeFrom', 'x'),
  StreamCommandError: () => new rabbitmq.StreamCommandError('create', 's', 6),
  SubscriptionLostError: () => new rabbitmq.SubscriptionLostError('s', 1n, 'x'),
  SubscribeError: () => new rabbitmq.SubscribeError('s', 1n, 6, true),
  MalformedChunkError: () => new rabbitmq.MalformedChunkError('s', 1n, 'x'),
  UsageError: () => new cli.UsageError('x'),
};

/** The "Errors" table of the reference (docs/reference/errors.md): class name → code. */
function documented(): Map<string, string> {
  const reference = readFileSync(
    resolve(import.meta.dirname, '../../../docs/reference/errors.md'),
    'utf8',
  );
  const section = reference.split('\n## Errors\n')[1]?.split('\n#')[0] ?? '';
  return new Map(
    [...section.matchAll(/^\| `(\w+)`\s*\| `([A-Z_]+)`/gm)].map((m) => [m[1] ?? '', m[2] ?? '']),
  );
}

describe('the codes of errors', () => {
  const exported = [main, memory, rabbitmq, metrics, cli].flatMap((entry) =>
    Object.entries(entry).filter(
      ([, value]) =>
        typeof value === 'function' &&
        (value === main.StreamWindowsError ||
          (value as { prototype: unknown }).prototype instanceof main.StreamWindowsError),
    ),
  );

  it('should have an instance here for every error class an entry point exports', () => {
    expect(exported.length).toBeGreaterThan(15);
    expect(exported.map(([name]) => name).filter((name) => !(name in INSTANCES))).toEqual([]);
  });

  it('should give every error class its own stable code, named as its class says', () => {
    const codes = Object.entries(INSTANCES).map(([name, make]) => {
      const error = make();
      expect(error.name).toBe(name);
      expect(error.code).toMatch(/^[A-Z]+(_[A-Z]+)*$/);
      return error.code;
    });
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('should list every error class with its code in the README', () => {
    const table = documented();
    const missing = Object.entries(INSTANCES)
      .map(([name, make]) => [name, make().code] as const)
      .filter(([name, code]) => table.get(name) !== code);
    expect(missing).toEqual([]);
  });
});
