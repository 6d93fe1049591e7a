#!/usr/bin/env node
// The `stream-windows` command (package.json "bin"): see ./cli.ts and `stream-windows --help`.
import { runCli } from './cli.js';

// A reader that went away (`stream-windows tail --json | head -1`) is no failure: nothing
// is left to write to. Any other failure of stdout ends the command as a failure.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE')
    process.stderr.write(`stream-windows: writing to stdout failed: ${error.message}\n`);
  process.exit(error.code === 'EPIPE' ? 0 : 1);
});

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
