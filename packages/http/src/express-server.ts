// The HTTP server under an Express app, its requests and responses built with the app's
// prototypes from the start. Express otherwise swaps each one's prototype on arrival
// (Object.setPrototypeOf in app.handle), and V8 then gives every request and response a
// hidden class of its own: a descriptor array per object (about 2.5 KB per parked long-poll
// on the events tier) and slower property access. Express skips the swap when the prototype
// is already its own. Node's IncomingMessage and ServerResponse are plain constructor
// functions, so they can initialize objects of another prototype.
import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';

type NodeConstructor = (this: object, ...args: unknown[]) => void;

export function createExpressServer(app: Express): Server {
  function Request(this: IncomingMessage, socket: Socket): void {
    (IncomingMessage as unknown as NodeConstructor).call(this, socket);
  }
  Request.prototype = app.request;
  function Response(this: ServerResponse, req: IncomingMessage, options: unknown): void {
    (ServerResponse as unknown as NodeConstructor).call(this, req, options);
  }
  Response.prototype = app.response;
  return createServer(
    {
      IncomingMessage: Request as unknown as typeof IncomingMessage,
      ServerResponse: Response as unknown as typeof ServerResponse,
    },
    app,
  );
}
