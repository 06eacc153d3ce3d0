// What the machine and the processes on it use: memory and CPU time from /proc, and the facts a report starts with.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { kcpBinDir } from "../tools/kcp/harness.ts";
import { type BenchEnv } from "./env.ts";

export interface Memory {
  rssMiB: number;
  peakRssMiB: number;
}

/** VmRSS and VmHWM of a process from /proc (the binaries' pids are their node processes: no wrapper shell). */
export function memoryOf(pid: number | undefined): Memory | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rssMiB: kib("VmRSS") / 1024, peakRssMiB: kib("VmHWM") / 1024 };
  } catch {
    return undefined;
  }
}

export interface MachineFacts {
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  kcp: string;
  kcpServerVersion: string;
  loadAverageAtStart: number[];
}

export async function machineFacts(env: BenchEnv): Promise<MachineFacts> {
  let kcpVersion = "unknown";
  try {
    kcpVersion = execFileSync(path.join(kcpBinDir(), "kcp"), ["--version"], { encoding: "utf8" }).trim();
  } catch {
    // reported as unknown
  }
  const server = await env.kcp.admin.get<{ gitVersion?: string }>("/version").catch(() => ({ gitVersion: "unknown" }));
  return {
    cores: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    kcp: kcpVersion,
    kcpServerVersion: server.gitVersion ?? "unknown",
    loadAverageAtStart: os.loadavg(),
  };
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) a process has used so far, in ms; resolution one clock tick (10 ms), so sum many ops. */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
}
