// The HTTP server under an Express app, its requests and responses built with the app's
// prototypes from the start. Express otherwise swaps each one's prototype on arrival
// (Object.setPrototypeOf in app.handle), and V8 then gives every request and response a
// hidden class of its own: a descriptor array per object (about 2.5 KB per parked long-poll
// on the events tier) and slower property access. The classes below extend Node's own, so V8
// sizes their objects for the properties Node's constructors set: built by a plain function
// instead, a response outgrew its fast properties and every one became a hash table (1.6 KB
// per request and per response, measured in a heap snapshot of parked long-polls). They
// become the app's prototypes, so Express's swap finds each object already in place (one
// server per app: a second one would chain its classes onto the first's, whose objects Express
// would then swap again).
import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { Express } from 'express';
import { answerClientErrors } from './client-errors';
import { directRequestListener, type DirectRoute } from './direct-route';

export function createExpressServer(app: Express, directRoutes: DirectRoute[] = []): Server {
  class Request extends IncomingMessage {}
  Object.setPrototypeOf(Request.prototype, app.request);
  app.request = Request.prototype as Express['request'];
  class Response extends ServerResponse {}
  Object.setPrototypeOf(Response.prototype, app.response);
  app.response = Response.prototype as unknown as Express['response'];
  const server = createServer(
    { IncomingMessage: Request, ServerResponse: Response },
    directRoutes.length > 0 ? directRequestListener(app, directRoutes) : app,
  );
  answerClientErrors(server);
  return server;
}
