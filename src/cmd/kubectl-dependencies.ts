#!/usr/bin/env node
// kubectl-dependencies: the kubectl plugin (`kubectl dependencies why|graph|check|teardown|verify`; the commands are in
// src/plugin/commands/). kubectl finds it on PATH and passes the arguments after `dependencies` through. It runs with
// the user's own kubeconfig and rights.
import { run } from "../plugin/main.ts";

const code = await run(
  process.argv.slice(2),
  { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) },
  process.env,
);
process.exitCode = code;
