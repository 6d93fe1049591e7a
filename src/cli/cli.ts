import { parseArgs } from 'node:util';
import { describe } from '../common/errors.js';
import { brokerUrls } from './broker-urls.js';
import {
  COMMON_HELP,
  COMMON_OPTIONS,
  DEFAULT_URL,
  ExitCode,
  type CliIO,
  type Command,
  type OptionValues,
} from './command.js';
import { errorText } from './error-text.js';
import { skipCommand } from './skip-command.js';
import { statusCommand } from './status-command.js';
import { colourWanted } from './style.js';
import { tailCommand } from './tail-command.js';
import { UsageError } from './usage-error.js';
import { packageVersion } from './version.js';

const COMMANDS: readonly Command[] = [statusCommand, tailCommand, skipCommand];

const EXIT_CODES_HELP = `Exit codes:
  0  done (tail: stopped by --count, SIGINT or SIGTERM, or its reader gone)
  1  failed: broker unreachable or refusing, a stream that does not exist, a skip refused, ...
  2  usage error: unknown command or option, missing or malformed value`;

const TOP_HELP = `Usage: stream-windows <command> [options]

Look at stream-windows jobs (and database sinks and outbox relays) on RabbitMQ Streams, and
step a stopped job over a bad message.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(8)}${c.summary}`).join('\n')}
  help    Show the help of a command: stream-windows help <command>

Options:
  -h, --help     Show this help
  -V, --version  Print the version

Environment:
  RABBITMQ_STREAM_URL  Broker when --url is not given (default ${DEFAULT_URL}); several
                       nodes of one cluster separated by commas, as --url takes them
  DATABASE_URL         PostgreSQL holding a database sink's checkpoints or an outbox relay's
                       table, when status --sink or --relay is given no --database
  NO_COLOR             Set (non-empty) to turn colours off; they are off anyway when
                       stdout is not a terminal

Data goes to stdout, messages and errors to stderr.

${EXIT_CODES_HELP}
`;

function commandHelp(command: Command): string {
  return `${command.help}\n\n${COMMON_HELP}\n\n${EXIT_CODES_HELP}\n`;
}

/**
 * Runs the command line `argv` (without node and the script) and resolves to the exit code.
 * Never rejects: usage errors are reported on stderr with exit 2, failures with exit 1.
 */
export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    if (error instanceof UsageError) {
      const help = error.command === undefined ? '--help' : `help ${error.command}`;
      io.stderr.write(
        `stream-windows: ${error.message}\nRun 'stream-windows ${help}' for usage.\n`,
      );
      return ExitCode.usage;
    }
    io.stderr.write(`stream-windows: ${errorText(error)}\n`);
    return ExitCode.failure;
  }
}

async function dispatch(argv: readonly string[], io: CliIO): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h') {
    // Asked for, help is the output; without a command, it is a usage error.
    (first === undefined ? io.stderr : io.stdout).write(TOP_HELP);
    return first === undefined ? ExitCode.usage : ExitCode.ok;
  }
  if (first === '--version' || first === '-V') {
    io.stdout.write(`${packageVersion()}\n`);
    return ExitCode.ok;
  }
  if (first === 'help') {
    const [name, ...extra] = rest;
    if (extra.length > 0) throw new UsageError(`help takes one command, given: ${rest.join(' ')}`);
    io.stdout.write(name === undefined ? TOP_HELP : commandHelp(commandNamed(name)));
    return ExitCode.ok;
  }
  const command = commandNamed(first);
  const values = parse(command, rest);
  if (values.help === true) {
    io.stdout.write(commandHelp(command));
    return ExitCode.ok;
  }
  const url = stringValue(values.url) ?? nonEmpty(io.env.RABBITMQ_STREAM_URL) ?? DEFAULT_URL;
  let urls: string[];
  try {
    urls = brokerUrls(url);
  } catch (error) {
    throw new UsageError(describe(error), command.name);
  }
  return command.run(values, {
    io,
    urls,
    json: values.json === true,
    colour: colourWanted(io.stdout, io.env),
  });
}

function commandNamed(name: string): Command {
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) {
    throw new UsageError(
      name.startsWith('-') ? `unknown option '${name}'` : `unknown command '${name}'`,
    );
  }
  return command;
}

function parse(command: Command, args: readonly string[]): OptionValues {
  try {
    return parseArgs({
      args: [...args],
      options: { ...COMMON_OPTIONS, ...command.options },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    // node:util reports a bad command line as a TypeError with an ERR_PARSE_ARGS_* code.
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError(describe(error), command.name);
    }
    throw error;
  }
}

function stringValue(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}
