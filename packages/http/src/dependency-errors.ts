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
  // PostgreSQL: the server is starting, shutting down, or refuses connections.
  '57P01',
  '57P02',
  '57P03',
  '53300',
  // Prisma: cannot reach, timed out, connection closed.
  'P1001',
  'P1002',
  'P1017',
]);

const MESSAGES = [
  /^Connection is closed/,
  /Stream isn't writeable/,
  /Reached the max retries per request limit/,
  /^Command timed out/,
  /Connection terminated/,
  /timeout exceeded when trying to connect/,
  /Can't reach database server/,
];

export function isDependencyDown(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 5) return false;
  const { name, code, message, cause, errors } = error as {
    name?: string;
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (name === 'MaxRetriesPerRequestError' || name === 'PrismaClientInitializationError')
    return true;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (typeof message === 'string' && MESSAGES.some((pattern) => pattern.test(message))) return true;
  if (Array.isArray(errors) && errors.some((inner) => isDependencyDown(inner, depth + 1)))
    return true;
  return isDependencyDown(cause, depth + 1);
}
