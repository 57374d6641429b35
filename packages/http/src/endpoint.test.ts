// The HTTP conventions every endpoint inherits, exercised through a real Express app and real
// HTTP requests (supertest): parameter sources per method, the envelope, and JSON for every
// failure.
import express, { Router } from 'express';
import request from 'supertest';
import Transport from 'winston-transport';
import { z } from 'zod';
import { createLogger, setLogger } from '@parley/logger';
import { endpoint } from './endpoint';
import {
  bodyParsers,
  defineRoute,
  errorHandler,
  notFound,
  requestContext,
  type UploadLimits,
} from './middleware';
import { p } from './params';

class Capture extends Transport {
  entries: Record<string, unknown>[] = [];
  override log(info: Record<string, unknown>, next: () => void): void {
    this.entries.push(info);
    next();
  }
}

const capture = new Capture();

function buildApp(limitBytes = 64 * 1024, uploads?: UploadLimits): express.Express {
  const router = Router();
  const echo = endpoint(
    {
      path: { item_id: p.int() },
      params: {
        name: p.string({ maxLength: 20 }),
        count: p.int().optional(),
        flag: p.bool().default(false),
        to: p.json(z.array(z.number().int())).optional(),
      },
    },
    ({ path, params }) => ({ item_id: path.item_id, ...params }),
  );
  defineRoute(router, '/items/:item_id', { GET: echo, POST: echo, PATCH: echo, DELETE: echo });
  defineRoute(router, '/boom', {
    GET: endpoint({}, () => {
      throw new Error('secret internals');
    }),
  });
  const app = express();
  app.set('query parser', 'simple');
  app.use(requestContext());
  app.use('/api/v1', bodyParsers(limitBytes, uploads), router);
  app.use(notFound);
  app.use(errorHandler);
  return app;
}

beforeAll(() => {
  const logger = createLogger({ level: 'http', format: 'json' });
  logger.clear().add(capture);
  setLogger(logger);
});

const app = buildApp();

describe('parameter sources for every method', () => {
  it('reads GET parameters from the query string', async () => {
    const res = await request(app)
      .get('/api/v1/items/7')
      .query({ name: 'a', count: '3', to: '[1,2]' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      result: 'success',
      msg: '',
      item_id: 7,
      name: 'a',
      count: 3,
      flag: false,
      to: [1, 2],
    });
  });

  it('reads a multipart POST body, as zulip-js sends it', async () => {
    const res = await request(app)
      .post('/api/v1/items/7')
      .field('name', 'multi')
      .field('flag', 'true')
      .field('to', '[3]');
    expect(res.body).toMatchObject({ result: 'success', name: 'multi', flag: true, to: [3] });
  });

  it('reads an urlencoded PATCH body', async () => {
    const res = await request(app).patch('/api/v1/items/7').type('form').send('name=form&count=-4');
    expect(res.body).toMatchObject({ result: 'success', name: 'form', count: -4 });
  });

  it('reads PATCH and DELETE parameters from the query string (zulip-js)', async () => {
    const patched = await request(app).patch('/api/v1/items/7?name=q&flag=true');
    expect(patched.body).toMatchObject({ result: 'success', name: 'q', flag: true });
    const deleted = await request(app).delete('/api/v1/items/7?name=d');
    expect(deleted.body).toMatchObject({ result: 'success', name: 'd' });
  });

  it('reads a multipart DELETE body', async () => {
    const res = await request(app).delete('/api/v1/items/7').field('name', 'gone');
    expect(res.body).toMatchObject({ result: 'success', name: 'gone' });
  });

  it('prefers the body over the query string', async () => {
    const res = await request(app)
      .post('/api/v1/items/7?name=query')
      .type('form')
      .send('name=body');
    expect(res.body.name).toBe('body');
  });

  it('reads a JSON object body like a form of JSON values', async () => {
    const res = await request(app)
      .post('/api/v1/items/7')
      .send({ name: 'json', count: 2, to: [5, 6], flag: true });
    expect(res.body).toMatchObject({
      result: 'success',
      name: 'json',
      count: 2,
      to: [5, 6],
      flag: true,
    });
  });
});

describe('ignored_parameters_unsupported', () => {
  it('lists undeclared parameters, sorted, including a path id repeated in the query', async () => {
    const res = await request(app)
      .post('/api/v1/items/7?item_id=7&zeta=1')
      .field('name', 'x')
      .field('alpha', '2');
    expect(res.status).toBe(200);
    expect(res.body.ignored_parameters_unsupported).toEqual(['alpha', 'item_id', 'zeta']);
  });

  it('is absent when every parameter is supported', async () => {
    const res = await request(app).get('/api/v1/items/7?name=x');
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
  });

  it('is never added to errors', async () => {
    const res = await request(app).get('/api/v1/items/7?count=x&unknown=1');
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
  });
});

describe('bad input answers with a 4xx JSON envelope', () => {
  it('reports a missing parameter', async () => {
    const res = await request(app).get('/api/v1/items/7');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      result: 'error',
      msg: "Missing 'name' argument",
      code: 'REQUEST_VARIABLE_MISSING',
      var_name: 'name',
    });
  });

  it('reports a mistyped path parameter', async () => {
    const res = await request(app).get('/api/v1/items/seven?name=x');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      result: 'error',
      msg: 'item_id is not an integer',
      code: 'BAD_REQUEST',
    });
  });

  it('reports an out-of-range id instead of passing it on', async () => {
    const res = await request(app).get('/api/v1/items/99999999999?name=x');
    expect(res.body).toEqual({ result: 'error', msg: 'item_id is too large', code: 'BAD_REQUEST' });
  });

  it('reports null bytes in parameters and in the path', async () => {
    const inBody = await request(app).post('/api/v1/items/7').type('form').send('name=a%00b');
    expect(inBody.status).toBe(400);
    expect(inBody.body.msg).toBe('Invalid name: null bytes are not allowed');
    const inJson = await request(app)
      .post('/api/v1/items/7')
      .field('name', 'x')
      .field('to', '"\\u0000"');
    expect(inJson.status).toBe(400);
  });

  it('reports an oversized value with its limit', async () => {
    const res = await request(app)
      .get('/api/v1/items/7')
      .query({ name: 'x'.repeat(21) });
    expect(res.body.msg).toBe('name is too long (limit: 20 characters)');
  });

  it('answers malformed JSON bodies with INVALID_JSON', async () => {
    const res = await request(app)
      .post('/api/v1/items/7')
      .set('Content-Type', 'application/json')
      .send('{"name":');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ result: 'error', msg: 'Malformed JSON', code: 'INVALID_JSON' });
  });

  it('answers a malformed multipart body with 400', async () => {
    const res = await request(app)
      .post('/api/v1/items/7')
      .set('Content-Type', 'multipart/form-data; boundary=xyz')
      .send('--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nunterminated');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
  });

  it('answers bodies over the limit with 413 JSON', async () => {
    const small = buildApp(1024);
    const urlencoded = await request(small)
      .post('/api/v1/items/7')
      .type('form')
      .send(`name=${'x'.repeat(4096)}`);
    expect(urlencoded.status).toBe(413);
    expect(urlencoded.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
    const multipart = await request(small).post('/api/v1/items/7').field('name', 'x'.repeat(4096));
    expect(multipart.status).toBe(413);
    expect(multipart.body.result).toBe('error');
  });

  it('refuses files over the upload limit and more than two file parts', async () => {
    const uploads = buildApp(1024 * 1024, { maxFileBytes: 1024 * 1024 });
    const big = await request(uploads)
      .post('/api/v1/items/7')
      .attach('file', Buffer.alloc(1024 * 1024 + 1), 'big.bin');
    expect(big.status).toBe(400);
    expect(big.body).toEqual({
      result: 'error',
      msg: 'Uploaded file is larger than the allowed limit of 1 MiB',
      code: 'BAD_REQUEST',
    });
    const three = await request(uploads)
      .post('/api/v1/items/7')
      .attach('a', Buffer.from('a'), 'a.txt')
      .attach('b', Buffer.from('b'), 'b.txt')
      .attach('c', Buffer.from('c'), 'c.txt');
    expect(three.body.msg).toBe('You may only upload one file at a time');
  });

  it('rejects file parts where no upload is expected', async () => {
    const res = await request(app)
      .post('/api/v1/items/7')
      .field('name', 'x')
      .attach('file', Buffer.from('hi'), 'a.txt');
    expect(res.status).toBe(400);
    expect(res.body.result).toBe('error');
  });

  it('answers a bad percent-encoding in the path with 400 JSON', async () => {
    const res = await request(app).get('/api/v1/items/%E0%A4%A?name=x');
    expect(res.status).toBe(400);
    expect(res.body.result).toBe('error');
  });
});

describe('routing errors', () => {
  it('answers an unknown endpoint with 404 JSON', async () => {
    const res = await request(app).get('/api/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      result: 'error',
      msg: 'Endpoint does not exist',
      code: 'BAD_REQUEST',
    });
  });

  it('answers a wrong method with 405, the allowed methods and an Allow header', async () => {
    const res = await request(app).put('/api/v1/items/7');
    expect(res.status).toBe(405);
    expect(res.body).toEqual({
      result: 'error',
      msg: 'Method Not Allowed',
      code: 'BAD_REQUEST',
      allowed_methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    });
    expect(res.headers.allow).toBe('GET, POST, PATCH, DELETE');
  });

  it('answers an unexpected failure with a 500 envelope and no internals', async () => {
    const res = await request(app).get('/api/v1/boom');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      result: 'error',
      msg: 'Internal server error',
      code: 'BAD_REQUEST',
    });
    expect(JSON.stringify(res.body)).not.toContain('secret');
  });
});

describe('request log', () => {
  it('logs one line per request with its id, status and path but not the query string', async () => {
    capture.entries = [];
    const res = await request(app)
      .patch('/api/v1/items/7?name=private-content')
      .set('X-Request-Id', 'abc-123');
    expect(res.headers['x-request-id']).toBe('abc-123');
    const lines = capture.entries.filter((entry) => entry.message === 'request');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      request_id: 'abc-123',
      method: 'PATCH',
      path: '/api/v1/items/7',
      status: 200,
    });
    expect(JSON.stringify(lines[0])).not.toContain('private-content');
  });

  it('makes up an id when the client sends none or a strange one', async () => {
    const res = await request(app)
      .get('/api/v1/items/7?name=x')
      .set('X-Request-Id', 'no spaces allowed');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
