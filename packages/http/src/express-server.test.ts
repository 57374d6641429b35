// The server under both tiers builds requests and responses with the app's prototypes, so
// Express does not swap them on arrival, and Express works as before on them.
import { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createExpressServer } from './express-server';

describe('createExpressServer', () => {
  // What this guards is behaviour; the point of the classes (V8's fast properties, measured in
  // heap snapshots) is not observable from a test without V8's natives syntax.
  it('gives requests and responses the app’s prototypes from the start', async () => {
    const app = express();
    const server = createExpressServer(app);
    const seen: unknown[] = [];
    // Sees each request before Express's own handling of it (which would swap a prototype).
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      seen.push(
        Object.getPrototypeOf(req) === app.request,
        Object.getPrototypeOf(res) === app.response,
        // Node's own classes still (extended, see express-server.ts).
        req instanceof IncomingMessage && res instanceof ServerResponse,
      );
    });
    app.use(express.json());
    app.post('/echo/:name', (req, res) => {
      res.status(201).set('X-Name', req.params.name).json({ body: req.body, q: req.query.q });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await fetch(`http://127.0.0.1:${port}/echo/ada?q=1`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ a: 1 }),
      });
      expect(answer.status).toBe(201);
      expect(answer.headers.get('x-name')).toBe('ada');
      expect(await answer.json()).toEqual({ body: { a: 1 }, q: '1' });
      expect(seen).toEqual([true, true, true]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
