// GET /api/v1/openapi.json: Parley's description generated from its route definitions, and the
// check that holds every test's answers to it (test/openapi-conformance.ts).
import express, { Router } from 'express';
import request from 'supertest';
import { z } from 'zod';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import { bodyParsers, defineRoute, documentedRoutes, endpoint, openApiPath } from '@parley/http';
import { eventsRouter } from '@parley/events-app';
import { createApp } from '../src/app';
import { conformanceViolations } from '../../../test/openapi-conformance';
import { sharedPath } from './shared-dir';

type Operation = {
  parameters?: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody?: {
    content: Record<
      string,
      { schema: { properties: Record<string, Record<string, unknown>>; required?: string[] } }
    >;
  };
  security: unknown[];
  responses: Record<string, unknown>;
};

describe('GET /api/v1/openapi.json', () => {
  let doc: { openapi: string; paths: Record<string, Record<string, Operation>> };

  beforeAll(async () => {
    const res = await request(createApp()).get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body as typeof doc;
  });

  it('is an OpenAPI 3.1 document of every route with its methods', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths['/api/v1/messages/{message_id}']!).sort()).toEqual([
      'delete',
      'get',
      'patch',
    ]);
    expect(Object.keys(doc.paths['/api/v1/messages']!).sort()).toEqual(['get', 'post']);
    expect(doc.paths['/api/v1/users/me']!.get).toBeDefined();
    expect(doc.paths['/api/v1/drafts']).toBeDefined();
    expect(Object.keys(doc.paths).length).toBeGreaterThan(60);
  });

  it('describes parameters from their declarations', () => {
    const getMessages = doc.paths['/api/v1/messages']!.get!;
    const anchor = getMessages.parameters!.find((param) => param.name === 'anchor');
    expect(anchor).toMatchObject({ in: 'query', required: false });
    const narrow = getMessages.parameters!.find((param) => param.name === 'narrow');
    // JSON-typed parameters travel as JSON text whose content the schema describes.
    expect(narrow!.schema).toMatchObject({ type: 'string', contentMediaType: 'application/json' });
    const byId = doc.paths['/api/v1/messages/{message_id}']!.get!;
    expect(byId.parameters!.find((param) => param.in === 'path')).toMatchObject({
      name: 'message_id',
      required: true,
      schema: { type: 'integer' },
    });
    const send =
      doc.paths['/api/v1/messages']!.post!.requestBody!.content[
        'application/x-www-form-urlencoded'
      ]!.schema;
    expect(send.properties.content).toMatchObject({ type: 'string' });
    expect(send.required).toEqual(expect.arrayContaining(['type', 'content']));
    // A length limit (counted in characters by a refinement) is stated all the same.
    const patchStream =
      doc.paths['/api/v1/streams/{stream_id}']!.patch!.requestBody!.content[
        'application/x-www-form-urlencoded'
      ]!.schema;
    expect(patchStream.properties.description).toMatchObject({ type: 'string', maxLength: 1024 });
  });

  it('says which endpoints need credentials and what every answer looks like', () => {
    expect(doc.paths['/api/v1/users/me']!.get!.security).toEqual([{ basicAuth: [] }]);
    expect(doc.paths['/api/v1/server_settings']!.get!.security).toEqual([]);
    expect(Object.keys(doc.paths['/api/v1/users/me']!.get!.responses)).toEqual([
      '200',
      '4XX',
      '5XX',
    ]);
    // A route that answers with a redirect: a 302 with its Location, without content.
    expect(doc.paths['/api/v1/calls/zoom/register']!.get!.responses).toMatchObject({
      '302': { headers: { Location: { schema: { type: 'string' } } } },
    });
    expect(Object.keys(doc.paths['/api/v1/calls/zoom/register']!.get!.responses)).toEqual([
      '302',
      '4XX',
      '5XX',
    ]);
  });

  it('describes the data of every success: each route declares what it answers', () => {
    // The events tier's routes too (declaring them touches no queue).
    eventsRouter({ store: {}, poller: {} } as never);
    const undeclared = documentedRoutes()
      .filter((route) => !route.response)
      .map((route) => `${route.method.toUpperCase()} ${route.path_pattern}`);
    expect(undeclared).toEqual([]);
    const send = doc.paths['/api/v1/messages']!.post!.responses['200'] as {
      content: Record<
        string,
        { schema: { properties: Record<string, unknown>; required: string[] } }
      >;
    };
    const { schema } = send.content['application/json']!;
    expect(schema.required).toEqual(['result', 'msg', 'id']);
    expect(schema.properties.id).toMatchObject({ type: 'integer' });
  });
});

describe("Zulip's operations", () => {
  /** Operations of Zulip's OpenAPI file that are not routes of a production server. */
  const NOT_ROUTES = new Map([
    // Zulip routes it on development servers only; production answers it as unknown.
    ['post /dev_fetch_api_key', 'development servers only'],
    // Pages of Zulip's documentation written as operations: the event system's overview, the
    // error format, and the request Zulip itself sends to an outgoing-webhook bot.
    ['post /real-time', 'documentation'],
    ['post /rest-error-handling', 'documentation'],
    ['post /zulip-outgoing-webhook', 'sent by the server, not served'],
  ]);

  it('routes every operation the reference describes, on one tier or the other', () => {
    const reference = parse(
      readFileSync(sharedPath('reference', 'zulip-openapi.yaml'), 'utf8'),
    ) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const methods = new Set(['get', 'post', 'patch', 'put', 'delete']);
    // Path parameters' names differ (Zulip's {id} and Parley's {stream_id}): compared unnamed.
    const unnamed = (path: string) => path.replace(/\{[^}]+\}/g, '{}');
    eventsRouter({ store: {}, poller: {} } as never);
    const routed = new Set(
      documentedRoutes().map(
        (route) => `${route.method} ${unnamed(openApiPath(route.path_pattern))}`,
      ),
    );
    const operations = Object.entries(reference.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => methods.has(method))
        .map((method) => `${method} ${path}`),
    );
    expect(operations.length).toBeGreaterThan(130);
    const missing = operations.filter(
      (operation) => !NOT_ROUTES.has(operation) && !routed.has(unnamed(operation)),
    );
    expect(missing).toEqual([]);
    // The exceptions are still in the file (a newer reference may drop one).
    expect([...NOT_ROUTES.keys()].filter((operation) => !operations.includes(operation))).toEqual(
      [],
    );
  });
});

describe('the conformance check of test answers', () => {
  it('reports an answer from an undocumented route and a malformed envelope', async () => {
    const rogue = express();
    rogue.get('/api/v1/rogue', (_req, res) => {
      res.json({ result: 'success', msg: '' });
    });
    rogue.get('/api/v1/bad-error', (_req, res) => {
      res.status(400).json({ result: 'error', msg: 'no code' });
    });
    await request(rogue).get('/api/v1/rogue');
    await request(rogue).get('/api/v1/bad-error');
    const found = conformanceViolations();
    expect(found).toEqual([
      expect.stringContaining(
        'GET /api/v1/rogue → 200: answered by a route the OpenAPI description lacks',
      ),
      expect.stringContaining(
        "GET /api/v1/bad-error → 400: not an error envelope: data must have required property 'code'",
      ),
    ]);
  });
});

describe('the check of a success against its route’s declared data', () => {
  it('reports a missing, mistyped or undeclared key', async () => {
    const router = Router();
    let answer: Record<string, unknown> = {};
    defineRoute(router, '/declared', {
      GET: endpoint({ response: z.object({ count: z.int() }) }, () => answer),
    });
    const app = express();
    app.use(bodyParsers(1024));
    app.use('/api/v1', router);
    for (const body of [{ count: 2 }, {}, { count: 'two' }, { count: 2, extra: true }]) {
      answer = body;
      expect((await request(app).get('/api/v1/declared')).status).toBe(200);
    }
    expect(conformanceViolations()).toEqual([
      expect.stringContaining("must have required property 'count'"),
      expect.stringContaining('data/count must be integer'),
      expect.stringContaining('must NOT have additional properties'),
    ]);
  });
});
