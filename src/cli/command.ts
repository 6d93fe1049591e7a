import type { ParseArgsConfig } from 'node:util';
import { ConfigError } from '../common/errors.js';
import { checkStreamName } from '../common/stream-protocol.js';
import { parseStreamUrl } from '../rabbitmq/connection-url.js';
import type { ReaderWatch } from './reader-gone.js';
import { UsageError } from './usage-error.js';

/** What the CLI writes to: standard streams and the environment, given so tests can swap them. */
export interface CliIO {
  readonly stdout: NodeJS.WritableStream & { readonly isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { readonly isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  /** Starts hearing stdout's reader go (main.ts: `watchReader`); without it, a write's EPIPE. */
  readonly watchReader?: () => ReaderWatch;
}

/** The broker a command talks to when neither --url nor RABBITMQ_STREAM_URL says otherwise. */
export const DEFAULT_URL = 'rabbitmq-stream://guest:guest@127.0.0.1:5552/';

/** The CLI's exit codes (documented in its help and the README). */
export const ExitCode = {
  ok: 0,
  /** The command could not do its work: broker unreachable or refusing, missing stream, ... */
  failure: 1,
  /** The command line was wrong. */
  usage: 2,
} as const;

/** Options every command takes. */
export const COMMON_OPTIONS = {
  url: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

export const COMMON_HELP = `Common options:
  --url URL   Broker, or nodes of one cluster separated by commas (tried in turn)
              (default: $RABBITMQ_STREAM_URL, else ${DEFAULT_URL})
  --json      Machine-readable output on stdout
  -h, --help  Show this help`;

/** Parsed option values, as node:util parseArgs gives them. */
export type OptionValues = Readonly<Record<string, string | boolean | undefined>>;

export interface CommandContext {
  readonly io: CliIO;
  /** --url, else RABBITMQ_STREAM_URL, else DEFAULT_URL: one node, or several of one cluster. */
  readonly urls: readonly string[];
  readonly json: boolean;
  /** Whether stdout gets colours (a terminal, and NO_COLOR unset). */
  readonly colour: boolean;
}

/** One subcommand: its options beyond the common ones, its help, and what it does. */
export interface Command {
  readonly name: string;
  /** One line, for the list of commands. */
  readonly summary: string;
  /** The whole help text, without the common options (added by the CLI). */
  readonly help: string;
  readonly options: NonNullable<ParseArgsConfig['options']>;
  /** Resolves to the exit code; throws UsageError for bad values, anything else is a failure. */
  run(values: OptionValues, context: CommandContext): Promise<number>;
}

/** The value of a string option the command cannot do without. */
export function requiredOption(values: OptionValues, name: string, command: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') {
    throw new UsageError(`${command} needs --${name}`, command);
  }
  return value;
}

/**
 * The value of a stream or super stream option the command cannot do without: a name
 * RabbitMQ serves on the first URL's vhost (`checkStreamName`), else a usage error, before
 * anything connects.
 */
export function streamOption(
  values: OptionValues,
  name: string,
  command: string,
  urls: readonly string[],
): string {
  const value = requiredOption(values, name, command);
  try {
    checkStreamName(`--${name}`, value, parseStreamUrl(urls[0] ?? DEFAULT_URL).vhost);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message, command);
    throw error;
  }
  return value;
}
