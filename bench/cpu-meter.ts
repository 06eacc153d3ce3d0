// CPU per operation: what kcp, the webhook and this process spent around each timed request.
import { cpuMsOf } from "./machine.ts";
import { type BenchEnv } from "./env.ts";
import { ms, now } from "./stats.ts";

export interface CpuPerOp {
  kcp: number;
  webhook: number;
  client: number;
}

/** Accumulates CPU used by kcp, the webhook and this process across many operations of one kind. */
export class CpuMeter {
  private ops = 0;
  private readonly total: CpuPerOp = { kcp: 0, webhook: 0, client: 0 };
  private readonly env: BenchEnv;

  constructor(env: BenchEnv) {
    this.env = env;
  }

  private read(): CpuPerOp {
    const c = process.cpuUsage();
    return {
      kcp: cpuMsOf(this.env.kcp.process.pid),
      webhook: cpuMsOf(this.env.bins.webhook?.proc.pid),
      client: (c.user + c.system) / 1000,
    };
  }

  /** Runs `fn`, adds its CPU to the totals and returns its wall time in ms with its result. */
  async time<T>(fn: () => Promise<T>): Promise<[number, T]> {
    const before = this.read();
    const t = now();
    const result = await fn();
    const wall = ms(t);
    const after = this.read();
    this.ops++;
    for (const k of ["kcp", "webhook", "client"] as const) this.total[k] += after[k] - before[k];
    return [wall, result];
  }

  perOp(): CpuPerOp {
    const d = this.ops || NaN;
    return { kcp: this.total.kcp / d, webhook: this.total.webhook / d, client: this.total.client / d };
  }
}
