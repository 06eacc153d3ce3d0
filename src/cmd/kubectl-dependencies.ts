#!/usr/bin/env node
// kubectl-dependencies: the kubectl plugin (`kubectl dependencies why|graph|check|teardown|verify`; the commands are in
// src/plugin/commands/). kubectl finds it on PATH and passes the arguments after `dependencies` through. It runs with
// the user's own kubeconfig and rights.
import { createInterface } from "node:readline/promises";
import { run, type Output } from "../plugin/main.ts";

const io: Output = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };
// A question only when a person can answer: with stdin not a terminal, a command that needs one says so instead.
if (process.stdin.isTTY)
  io.ask = async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return await rl.question(question);
    } finally {
      rl.close();
    }
  };
const code = await run(process.argv.slice(2), io, process.env);
process.exitCode = code;
