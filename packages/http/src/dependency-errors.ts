// Recognizing "a dependency is down" among thrown errors, so the envelope can say 503 (retry
// soon) instead of 500 (a bug). The errors come from ioredis (connection closed, retries
// exhausted, command timeout), node-postgres through Prisma's driver adapter (refused,
// reset, terminated) and Prisma itself (P1001 and friends).
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // Prisma: cannot reach, timed out, connection closed.
  'P1001',
  'P1002',
  'P1017',
]);

/** PostgreSQL SQLSTATEs: connection exceptions (class 08); the server shutting down, crashed or
 * starting (57P01-57P03); too many connections. */
const UNAVAILABLE_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;

const MESSAGES = [
  // Prisma's raw-query failures (P2010) carry the server's SQLSTATE only in their text.
  /Code: `(08[0-9A-Z]{3}|57P0[123]|53300)`/,
  /^Connection is closed/,
  // ioredis: a command sent in a pipeline (autopipelining) whose connection dropped before the
  // answer (Redis killed mid-request).
  /^Command aborted due to connection close/,
  /Stream isn't writeable/,
  /Reached the max retries per request limit/,
  /^Command timed out/,
  /Connection terminated/,
  /timeout exceeded when trying to connect/,
  /Can't reach database server/,
];

export function isDependencyDown(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 5) return false;
  const { name, code, message, cause, errors, meta } = error as {
    name?: string;
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
    meta?: { code?: unknown };
  };
  if (name === 'MaxRetriesPerRequestError' || name === 'PrismaClientInitializationError')
    return true;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)))
    return true;
  if (typeof meta?.code === 'string' && UNAVAILABLE_SQLSTATE.test(meta.code)) return true;
  if (typeof message === 'string' && MESSAGES.some((pattern) => pattern.test(message))) return true;
  if (Array.isArray(errors) && errors.some((inner) => isDependencyDown(inner, depth + 1)))
    return true;
  return isDependencyDown(cause, depth + 1);
}
