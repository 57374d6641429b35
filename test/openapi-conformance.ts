// Every JSON answer an integration test receives is checked against Parley's generated OpenAPI
// description (packages/http/src/openapi.ts): an answer under /api/v1 must come from a
// documented route and method, and match its response schema (the Zulip envelope: success with
// `result` and `msg` and the data the route declares, errors with `code` too). Violations fail
// the test file (after-env.ts).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Ajv from 'ajv';
import {
  documentedRoutes,
  observeAnswers,
  openApiDocument,
  successSchema,
  type DocumentedRoute,
} from '@parley/http';
import type { ValidateFunction } from 'ajv';

/** What the check reads of express's request and response (the root has no express types). */
interface Request {
  originalUrl: string;
  method: string;
  route?: { path?: unknown };
}
interface Response {
  req: Request;
  statusCode: number;
  json(body: unknown): Response;
  locals?: { routePattern?: string };
}

const violations: string[] = [];

export function conformanceViolations(): string[] {
  return violations.splice(0);
}

/** Observes the envelope's answers (which @parley/http writes itself) and patches express's
 * response.json of the instance every app in this test process uses (the one @parley/http
 * resolves), for answers written otherwise. */
export function checkResponsesAgainstOpenApi(): void {
  const requireFromHttp = createRequire(join(__dirname, '..', 'packages', 'http', 'package.json'));
  const express = requireFromHttp('express') as {
    response: Response & { __parleyChecked?: true };
  };
  const proto = express.response;
  const schemas = (
    openApiDocument({ title: 'check', version: '0' }).components as {
      schemas: Record<string, object>;
    }
  ).schemas;
  const ajv = new Ajv({ strict: false, allErrors: false });
  ajv.addSchema({ $id: 'parley', components: { schemas } });
  const success = ajv.compile(schemas.Success!);
  const error = ajv.compile(schemas.Error!);
  // Each route's success schema, compiled once (the route's entry is replaced when a test
  // builds another app, so the key is the entry itself).
  const compiled = new WeakMap<DocumentedRoute, ValidateFunction>();
  const routeSchema = (route: DocumentedRoute): ValidateFunction => {
    let validate = compiled.get(route);
    if (!validate) {
      // The components are registered under the id `parley`.
      const schema = JSON.parse(
        JSON.stringify(successSchema(route)).replaceAll(
          '"#/components/schemas/',
          '"parley#/components/schemas/',
        ),
      ) as object;
      validate = ajv.compile(schema);
      compiled.set(route, validate);
    }
    return validate;
  };
  observeAnswers((res, status, text) =>
    check(res.req, res.locals, status, JSON.parse(text) as unknown),
  );
  // Both registries (express's and @parley/http's) are fresh in each test file; patched once.
  if (proto.__parleyChecked) return;
  proto.__parleyChecked = true;
  const original = proto.json;
  proto.json = function (this: Response, body: unknown) {
    check(this.req, this.locals, this.statusCode, body);
    return original.call(this, body);
  } as typeof proto.json;

  function check(req: Request, locals: Response['locals'], status: number, body: unknown): void {
    const url = req.originalUrl.split('?')[0]!;
    if (!url.startsWith('/api/v1/') || url === '/api/v1/openapi.json') return;
    const where = `${req.method} ${url} → ${status}`;
    if (status >= 400) {
      if (!error(body))
        violations.push(`${where}: not an error envelope: ${ajv.errorsText(error.errors)}`);
      return;
    }
    if (!success(body)) {
      violations.push(`${where}: not a success envelope: ${ajv.errorsText(success.errors)}`);
      return;
    }
    // A route served past the router (direct-route.ts) has no req.route: its full pattern is
    // noted as defineRoute notes it, under the /api/v1 mount the description's paths omit.
    const pattern = req.route?.path ?? locals?.routePattern?.replace(/^\/api\/v1(?=\/)/, '');
    const method = req.method.toLowerCase();
    const route = documentedRoutes().find(
      (candidate) =>
        candidate.path_pattern === pattern &&
        (candidate.method === method || (method === 'head' && candidate.method === 'get')),
    );
    if (!route) {
      violations.push(
        `${where}: answered by a route the OpenAPI description lacks (${String(pattern)})`,
      );
      return;
    }
    const validate = routeSchema(route);
    if (!validate(body))
      violations.push(
        `${where}: does not match its documented answer: ${ajv.errorsText(validate.errors)}`,
      );
  }
}
