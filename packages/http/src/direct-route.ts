// A hot route served from the HTTP server's request event, past Express's router. The events
// tier parks thousands of long-polls at once: every one held the router's per-request state
// (its `next` closures, path parameters, the layer it stopped in) for the whole wait, and paid
// the layer matching on every poll. The route runs the same middleware and handler as the app
// would, in the same order, with the same request and response objects (createExpressServer
// gives them the app's prototypes), and its errors go to the same errorHandler. Anything else —
// another path or method, a GET with a body to parse — goes to the app unchanged.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { NotFoundError } from '@parley/errors';
import { getLogger } from '@parley/logger';
import { errorHandler } from './middleware';

export interface DirectRoute {
  method: 'GET';
  /** The exact path (no pattern, no trailing slash); any query string. */
  path: string;
  /** What the app runs before its routes for this path, in order (request id, metrics, …). */
  middleware: RequestHandler[];
  handler: RequestHandler;
}

/** The server's request listener: a direct route when one matches, else the app. Only for a
 * server whose requests and responses already have the app's prototypes (createExpressServer):
 * the middleware relies on Express's methods. */
export function directRequestListener(
  app: Express,
  routes: DirectRoute[],
): (req: IncomingMessage, res: ServerResponse) => void {
  const chains = routes.map((route) => ({
    route,
    handlers: [
      ...route.middleware,
      // Noted as defineRoute notes it (metrics label answers by it), once the middleware has
      // set up res.locals.
      ((_req, res, next) => {
        res.locals.routePattern = route.path;
        next();
      }) satisfies RequestHandler,
      route.handler,
    ],
  }));
  return (incoming, outgoing) => {
    const chain = chains.find((candidate) => matches(candidate.route, incoming));
    if (!chain) return void app(incoming, outgoing);
    const req = incoming as Request;
    const res = outgoing as Response;
    // What app.handle and the router set before a handler runs.
    req.res = res;
    res.req = req;
    res.locals ??= Object.create(null) as Response['locals'];
    req.originalUrl = req.url;
    req.baseUrl = '';
    req.params = {};
    // Only bodiless requests come here: the body parsers would have left an empty form.
    req.body = {};
    run(chain.handlers, 0, req, res);
  };
}

function matches(route: DirectRoute, req: IncomingMessage): boolean {
  if (req.method !== route.method) return false;
  const url = req.url ?? '';
  const end = url.indexOf('?');
  if ((end === -1 ? url : url.slice(0, end)) !== route.path) return false;
  // A body to parse (Zulip accepts GET parameters in one) takes the app's body parsers.
  const length = req.headers['content-length'];
  return (length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined;
}

/** Runs handlers[index…] as Express would: each one's `next` runs the following one, an
 * error (passed to `next`, thrown, or a rejected promise) ends in errorHandler. */
function run(handlers: RequestHandler[], index: number, req: Request, res: Response): void {
  const fail = (error: unknown) => {
    try {
      errorHandler(error, req, res, () => undefined);
    } catch (failure) {
      // Nothing left to answer with (headers already sent, say): as Express's final handler
      // would, drop the connection rather than the process.
      getLogger().error('answering an error failed', { error: failure, cause: error });
      res.destroy();
    }
  };
  const next: NextFunction = (error?: unknown) => {
    // Express's next('route') and next('router') skip routes; a direct route has none to skip.
    if (error) return fail(error);
    // The last handler passing the request on: nothing else here serves this path.
    if (index + 1 >= handlers.length) return fail(new NotFoundError());
    run(handlers, index + 1, req, res);
  };
  try {
    const result: unknown = handlers[index]!(req, res, next);
    if (result instanceof Promise) result.catch(fail);
  } catch (error) {
    fail(error);
  }
}
