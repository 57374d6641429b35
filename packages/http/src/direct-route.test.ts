// A route served past Express's router answers as the app would (middleware in order, the
// envelope, errors through errorHandler), and everything it does not match reaches the app.
import type { Server } from 'node:http';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { JsonableError } from '@parley/errors';
import type { DirectRoute } from './direct-route';
import { endpoint } from './endpoint';
import { jsonArray } from './envelope';
import { createExpressServer } from './express-server';
import { bodyParsers, defineRoute, errorHandler, notFound, requestContext } from './middleware';
import { p } from './params';

/** Notes which handler answered, so a test can tell the direct route from the app's. */
function echo(via: string): RequestHandler {
  return endpoint(
    { params: { name: p.string(), fail: p.bool().default(false) } },
    ({ params, res }) => {
      if (params.fail) throw new JsonableError('Told to fail');
      return {
        via,
        name: params.name,
        seen: res.locals.logContext.seen,
        // Queued events are JSON text already; they are answered as they are.
        events: jsonArray(['{"id":0,"type":"heartbeat"}', '{"id":1,"type":"typing"}']),
        nothing: undefined,
      };
    },
  );
}

const noteSeen: RequestHandler = (_req, res, next) => {
  res.locals.logContext.seen = 'middleware';
  next();
};

function buildServer(routes: DirectRoute[]): Server {
  const app = express();
  app.set('query parser', 'simple');
  app.use(requestContext(), noteSeen);
  const router = express.Router();
  router.use(bodyParsers(64 * 1024));
  defineRoute(router, '/echo', { GET: echo('app'), POST: echo('app') });
  app.use('/api/v1', router);
  app.use(notFound);
  app.use(errorHandler);
  return createExpressServer(app, routes);
}

const direct = buildServer([
  {
    method: 'GET',
    path: '/api/v1/echo',
    middleware: [requestContext(), noteSeen],
    handler: echo('direct'),
  },
  {
    method: 'GET',
    path: '/api/v1/boom',
    middleware: [requestContext()],
    handler: () => {
      throw new Error('secret internals');
    },
  },
  {
    method: 'GET',
    path: '/api/v1/late',
    middleware: [requestContext()],
    // An error once the answer has started: nothing can be answered any more.
    handler: (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('partial');
      return Promise.reject(new JsonableError('Too late'));
    },
  },
]);
const plain = buildServer([]);

describe('a direct route', () => {
  it('answers as the app does, after the same middleware', async () => {
    const [fast, slow] = await Promise.all(
      [direct, plain].map((server) => request(server).get('/api/v1/echo?name=ada&extra=1')),
    );
    for (const res of [fast!, slow!]) {
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['x-request-id']).toMatch(/^[\w-]{36}$/);
      expect(res.body).toEqual({
        result: 'success',
        msg: '',
        via: expect.any(String),
        name: 'ada',
        seen: 'middleware',
        events: [
          { id: 0, type: 'heartbeat' },
          { id: 1, type: 'typing' },
        ],
        ignored_parameters_unsupported: ['extra'],
      });
    }
    expect([fast!.body.via, slow!.body.via]).toEqual(['direct', 'app']);
  });

  it('answers errors through the app’s error handler', async () => {
    const failed = await request(direct).get('/api/v1/echo?name=ada&fail=true');
    expect(failed.status).toBe(400);
    expect(failed.body).toEqual({ result: 'error', msg: 'Told to fail', code: 'BAD_REQUEST' });
    const missing = await request(direct).get('/api/v1/echo');
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ result: 'error', code: 'REQUEST_VARIABLE_MISSING' });
  });

  it('answers an unexpected failure with the 500 envelope, and survives a failure it cannot answer', async () => {
    const boom = await request(direct).get('/api/v1/boom');
    expect(boom.status).toBe(500);
    expect(boom.body).toEqual({
      result: 'error',
      msg: 'Internal server error',
      code: 'BAD_REQUEST',
    });
    // The connection is dropped mid-answer; the server goes on serving.
    await expect(request(direct).get('/api/v1/late')).rejects.toThrow();
    expect((await request(direct).get('/api/v1/echo?name=after')).body).toMatchObject({
      via: 'direct',
      name: 'after',
    });
  });

  it('leaves to the app what it does not match: a body, another method or path', async () => {
    const withBody = await request(direct).get('/api/v1/echo').type('form').send('name=body');
    expect(withBody.body).toMatchObject({ via: 'app', name: 'body' });
    const posted = await request(direct).post('/api/v1/echo').type('form').send('name=post');
    expect(posted.body).toMatchObject({ via: 'app', name: 'post' });
    // Express matches a trailing slash too; only the exact path is served directly.
    const slash = await request(direct).get('/api/v1/echo/?name=slash');
    expect(slash.body).toMatchObject({ via: 'app', name: 'slash' });
    const head = await request(direct).head('/api/v1/echo?name=head');
    expect(head.status).toBe(200);
    const unknown = await request(direct).get('/api/v1/nowhere');
    expect(unknown.status).toBe(404);
  });
});
