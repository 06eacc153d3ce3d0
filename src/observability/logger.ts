// Structured JSON logs (pino). Loggers are passed in, never imported as singletons, so tests can silence them.
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(component: string, level = process.env["LOG_LEVEL"] ?? "info"): Logger {
  return pino({ level, base: { component }, timestamp: pino.stdTimeFunctions.isoTime });
}

/** A logger that writes nothing, for unit tests. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
