#!/usr/bin/env node
import { runCli } from './run.js';

const { stdout, stderr, code } = runCli(process.argv.slice(2));
process.stdout.write(stdout);
process.stderr.write(stderr);
process.exitCode = code;
