// winston, JSON in production and one readable line otherwise. Request handlers log through a
// child logger carrying request_id (and user/realm ids once known). Callers never pass API
// keys, passwords or message content; `redact` guards the usual field names anyway.
import winston from 'winston';

export type Logger = winston.Logger;

const SECRET_KEYS = new Set([
  'api_key',
  'apiKey',
  'password',
  'passwordHash',
  'authorization',
  'token',
  'content',
  'secret',
]);

const redact = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (SECRET_KEYS.has(key)) info[key] = '[redacted]';
  }
  return info;
});

/** An Error as JSON can carry it: winston serializes an Error given as a field to `{}`, which
 * loses exactly what a failure needs (message, stack, code, cause). */
export function serializeError(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error) || depth > 5) return error;
  const fields: Record<string, unknown> = {
    name: error.name,
    message: error.message,
    stack: error.stack,
  };
  for (const key of ['code', 'errno', 'syscall', 'address', 'port'] as const) {
    const value = (error as unknown as Record<string, unknown>)[key];
    if (value !== undefined) fields[key] = value;
  }
  if (error.cause !== undefined) fields.cause = serializeError(error.cause, depth + 1);
  if (error instanceof AggregateError)
    fields.errors = error.errors.map((inner) => serializeError(inner, depth + 1));
  return fields;
}

const errorFields = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (info[key] instanceof Error) info[key] = serializeError(info[key]);
  }
  return info;
});

export interface LoggerOptions {
  level: string;
  format: 'json' | 'pretty';
  /** Tests silence the console; errors still surface through assertions. */
  silent?: boolean;
  /** Every line to stderr (a command whose stdout is its answer). */
  toStderr?: boolean;
}

export function createLogger({
  level,
  format,
  silent = false,
  toStderr = false,
}: LoggerOptions): Logger {
  const rendering =
    format === 'json'
      ? winston.format.json()
      : winston.format.printf(({ level: lvl, message, timestamp, ...rest }) => {
          const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
          return `${String(timestamp)} ${lvl} ${String(message)}${extra}`;
        });
  return winston.createLogger({
    level,
    silent,
    format: winston.format.combine(
      redact(),
      errorFields(),
      winston.format.errors({ stack: true }),
      winston.format.timestamp(),
      rendering,
    ),
    transports: [
      new winston.transports.Console(
        toStderr ? { stderrLevels: Object.keys(winston.config.npm.levels) } : {},
      ),
    ],
  });
}

let root: Logger | undefined;

/** The process-wide logger; configured by `setLogger` at boot, quiet defaults before that. */
export function getLogger(): Logger {
  root ??= createLogger(defaultLoggerOptions());
  return root;
}

/** The process-wide logger's settings when nothing configured it. */
export function defaultLoggerOptions(): LoggerOptions {
  return {
    level: process.env.LOG_LEVEL ?? 'info',
    format: process.env.NODE_ENV === 'production' ? 'json' : 'pretty',
    silent: process.env.NODE_ENV === 'test',
  };
}

export function setLogger(logger: Logger): void {
  root = logger;
}
