#!/usr/bin/env node
// The `stream-windows` command (package.json "bin"): see ./cli.ts and `stream-windows --help`.
import { runCli } from './cli.js';
import { watchReader } from './reader-gone.js';

// A reader that went away (`stream-windows tail --json | head -1`) is no failure: nothing is
// left to write to, and the command ends as it does on a stop (tail hears it: watchReader).
// Any other failure of stdout ends the command as a failure.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') return;
  process.stderr.write(`stream-windows: writing to stdout failed: ${error.message}\n`);
  process.exit(1);
});

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  watchReader: () => watchReader(process.stdout),
});
