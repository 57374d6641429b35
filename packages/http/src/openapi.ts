// Parley's own OpenAPI 3.1 description, generated from the route definitions: every route
// declared with defineRoute and an endpoint() handler records its path, method, parameters
// (their zod schemas, as JSON Schema) and authentication here; openApiDocument() assembles
// them. Answers are described by the envelope every endpoint shares (Zulip's `result`, `msg`,
// `code`) and, for a success, the data the route declares (`response`); the test suite checks
// every response of its integration tests against this document (test/openapi-conformance.ts).
import { z } from 'zod';
import type { Param, ParamShape } from './params';

export type RouteAuth = 'basic' | 'none';

/** What an endpoint handler carries for the description. */
export interface EndpointDoc {
  path?: ParamShape;
  params?: ParamShape;
  /** The success's data, besides the envelope; 'none' for a success answered without a body
   * (204, as tus answers a DELETE); 'redirect' for one answered with a redirect (302 and a
   * Location, as the Zoom authorization start and the BigBlueButton join). */
  response?: z.ZodType | 'none' | 'redirect';
  /** A success that is usually answered without a body, with this status, beside the JSON
   * one (tus: a creation answers 201 and a PATCH 204, except the request that completes the
   * upload, which answers the JSON). */
  alsoNoContent?: 201 | 204;
  auth: RouteAuth;
}

export interface DocumentedRoute extends EndpointDoc {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  /** Express's pattern, relative to /api/v1 (`/messages/:message_id`). */
  path_pattern: string;
}

const DOC = Symbol('parley.endpointDoc');
const routes = new Map<string, DocumentedRoute>();

export function attachDoc<H extends object>(handler: H, doc: EndpointDoc): H {
  Object.defineProperty(handler, DOC, { value: doc });
  return handler;
}

export function docOf(handler: object): EndpointDoc | undefined {
  return (handler as { [DOC]?: EndpointDoc })[DOC];
}

/** Called by defineRoute: the same route defined again (a test building a second app)
 * replaces its entry. */
export function recordRoute(pathPattern: string, method: string, doc: EndpointDoc): void {
  const lower = method.toLowerCase() as DocumentedRoute['method'];
  routes.set(`${lower} ${pathPattern}`, { ...doc, method: lower, path_pattern: pathPattern });
}

export function documentedRoutes(): DocumentedRoute[] {
  return [...routes.values()];
}

/** `/messages/:message_id` → `/messages/{message_id}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/:(\w+)/g, '{$1}').replace(/\*(\w+)/g, '{$1}');
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

/** A success answer of a route: the envelope and, where the route declares it, its data (one
 * object, so that a data schema closed to unknown keys still admits the envelope's). */
export function successSchema(route: Pick<EndpointDoc, 'response'>): Record<string, unknown> {
  if (!route.response) return { $ref: '#/components/schemas/Success' };
  // No JSON success at all.
  if (route.response === 'none' || route.response === 'redirect') return { not: {} };
  const data = jsonSchema(route.response, 'output') as {
    properties?: Record<string, unknown>;
    required?: string[];
  };
  return {
    ...data,
    type: 'object',
    properties: { ...ENVELOPE_SUCCESS.properties, ...data.properties },
    required: [...ENVELOPE_SUCCESS.required, ...(data.required ?? [])],
  };
}

/** A parameter as it travels: form values are text; JSON-typed ones are JSON text whose
 * content the schema describes (OpenAPI 3.1's contentMediaType/contentSchema). */
function wireSchema(param: Param<unknown>): Record<string, unknown> {
  const schema = jsonSchema(param.schema);
  const withDefault = param.defaultValue === undefined ? {} : { default: param.defaultValue };
  if (param.decoding === 'json' || param.decoding === 'jsonOrText')
    return {
      type: 'string',
      contentMediaType: 'application/json',
      contentSchema: schema,
      ...withDefault,
    };
  return { ...schema, ...withDefault };
}

const ENVELOPE_SUCCESS = {
  type: 'object',
  required: ['result', 'msg'],
  properties: {
    result: { const: 'success' },
    msg: { type: 'string' },
    ignored_parameters_unsupported: { type: 'array', items: { type: 'string' } },
  },
  additionalProperties: true,
};

const ENVELOPE_ERROR = {
  type: 'object',
  required: ['result', 'msg', 'code'],
  properties: {
    result: { const: 'error' },
    msg: { type: 'string' },
    code: { type: 'string' },
  },
  additionalProperties: true,
};

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  /** Prefix of every documented path. */
  basePath?: string;
}

export function openApiDocument(info: OpenApiInfo): Record<string, unknown> {
  const base = info.basePath ?? '/api/v1';
  const paths: Record<string, Record<string, unknown>> = {};
  const sorted = documentedRoutes().sort((a, b) =>
    a.path_pattern === b.path_pattern
      ? a.method.localeCompare(b.method)
      : a.path_pattern.localeCompare(b.path_pattern),
  );
  for (const route of sorted) {
    const parameters: Record<string, unknown>[] = Object.entries(route.path ?? {}).map(
      ([name, param]) => ({ name, in: 'path', required: true, schema: wireSchema(param) }),
    );
    const declared = Object.entries(route.params ?? {});
    const properties = Object.fromEntries(
      declared.map(([name, param]) => [name, wireSchema(param)]),
    );
    const required = declared.filter(([, param]) => param.required).map(([name]) => name);
    const inBody = route.method === 'post' || route.method === 'patch' || route.method === 'put';
    if (!inBody)
      for (const [name, param] of declared)
        parameters.push({ name, in: 'query', required: param.required, schema: wireSchema(param) });
    const operation: Record<string, unknown> = {
      operationId: `${route.method}${route.path_pattern.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
      ...(parameters.length ? { parameters } : {}),
      ...(inBody && declared.length
        ? {
            requestBody: {
              required: required.length > 0,
              content: {
                'application/x-www-form-urlencoded': {
                  schema: { type: 'object', properties, ...(required.length ? { required } : {}) },
                },
                'multipart/form-data': {
                  schema: { type: 'object', properties, ...(required.length ? { required } : {}) },
                },
              },
            },
          }
        : {}),
      ...(route.auth === 'basic' ? { security: [{ basicAuth: [] }] } : { security: [] }),
      responses: {
        ...(route.response === 'none'
          ? { '204': { description: 'Success, without a body' } }
          : route.response === 'redirect'
            ? {
                '302': {
                  description: 'Success: a redirect, without a body',
                  headers: {
                    Location: { description: 'Where to go', schema: { type: 'string' } },
                  },
                },
              }
            : {
                '200': {
                  description: 'Success',
                  content: { 'application/json': { schema: successSchema(route) } },
                },
              }),
        ...(route.alsoNoContent
          ? { [String(route.alsoNoContent)]: { description: 'Success, without a body' } }
          : {}),
        '4XX': {
          description: 'A client error (Zulip error envelope)',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
        '5XX': {
          description: 'A dependency is unavailable (503 SERVER_NOT_READY)',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      },
    };
    (paths[`${base}${openApiPath(route.path_pattern)}`] ??= {})[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    paths,
    components: {
      securitySchemes: {
        basicAuth: {
          type: 'http',
          scheme: 'basic',
          description: 'The account email and its API key (POST /fetch_api_key)',
        },
      },
      schemas: { Success: ENVELOPE_SUCCESS, Error: ENVELOPE_ERROR },
    },
  };
}
