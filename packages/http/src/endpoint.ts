// `endpoint()` turns a parameter declaration and a handler into an Express handler: parse the
// path and the parameters, run the handler, answer with the envelope. Authentication lives in
// the apps, which wrap this with their own context (see apps/api/src/lib/endpoint.ts).
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { sendSuccess, type Json } from './envelope';
import { attachDoc, type RouteAuth } from './openapi';
import { parseParams, parsePathParams, type ParamShape, type ParamValues } from './params';

export interface EndpointSpec<P extends ParamShape, Q extends ParamShape> {
  path?: P;
  params?: Q;
  /** What a success carries besides `result` and `msg` (a z.object; `z.object({})` for the
   * envelope alone): the OpenAPI description publishes it, and the tests hold every answer
   * to it. */
  response?: z.ZodType;
}

export interface EndpointInput<P extends ParamShape, Q extends ParamShape> {
  req: Request;
  res: Response;
  path: ParamValues<P>;
  params: ParamValues<Q>;
}

type NoParams = Record<never, never>;

export function endpoint<P extends ParamShape = NoParams, Q extends ParamShape = NoParams>(
  spec: EndpointSpec<P, Q>,
  handler: (input: EndpointInput<P, Q>) => Promise<Json> | Json,
  auth: RouteAuth = 'none',
): RequestHandler {
  // One shape object per endpoint, made once: parsing works out what it needs of a shape once.
  const pathShape = spec.path ?? ({} as P);
  const paramShape = spec.params ?? ({} as Q);
  return attachDoc<RequestHandler>(
    async (req, res) => {
      const path = parsePathParams(pathShape, req.params as Record<string, string>);
      const { values, ignored } = parseParams(paramShape, {
        body: req.body as Record<string, unknown>,
        query: req.query as Record<string, unknown>,
      });
      const data = await handler({ req, res, path, params: values });
      sendSuccess(res, data, ignored);
    },
    { path: spec.path, params: spec.params, response: spec.response, auth },
  );
}
