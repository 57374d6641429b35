// The Zulip response envelope (spec 2.1): every answer is JSON with `result` and `msg`.
import type { Response } from 'express';
import { errorBody, type JsonableError } from '@parley/errors';

export type Json = Record<string, unknown>;

export function sendSuccess(res: Response, data: Json = {}, ignored: string[] = []): void {
  const body: Json = { result: 'success', msg: '', ...data };
  // Zulip adds the list only to successful responses, and only when non-empty.
  if (ignored.length > 0) body.ignored_parameters_unsupported = ignored;
  res.status(200).json(body);
}

export function sendError(res: Response, error: JsonableError): void {
  res.set(error.headers);
  res.status(error.httpStatus).json({ result: 'error', ...errorBody(error) });
}
