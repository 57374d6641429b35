import { Router } from 'express';

/** `/health` answers while the process runs; `/ready` only while every dependency answers, so
 * the load balancer stops sending traffic to a replica that lost Postgres or Redis. */
export function healthRoutes(
  checks: Record<string, () => Promise<boolean>>,
  isDraining: () => boolean,
): Router {
  const router = Router();
  router.get('/health', (_req, res) => {
    res.json({ result: 'success', msg: '' });
  });
  router.get('/ready', async (_req, res) => {
    const entries = await Promise.all(
      Object.entries(checks).map(
        async ([name, check]) => [name, await withinDeadline(check)] as const,
      ),
    );
    const status = Object.fromEntries(entries);
    const ready = !isDraining() && entries.every(([, ok]) => ok);
    res.status(ready ? 200 : 503).json({
      result: ready ? 'success' : 'error',
      msg: ready ? '' : isDraining() ? 'Shutting down' : 'Dependencies unavailable',
      ...(ready ? {} : { code: 'SERVER_NOT_READY' }),
      checks: status,
    });
  });
  return router;
}

/** A dependency that does not answer within a second counts as down: a load balancer's check
 * must not hang on a client library's reconnection attempts. */
async function withinDeadline(check: () => Promise<boolean>, ms = 1000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([check().catch(() => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
