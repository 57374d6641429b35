// The Zulip response envelope (spec 2.1): every answer is JSON with `result` and `msg`.
import type { Response } from 'express';
import { errorBody, type JsonableError } from '@parley/errors';

export type Json = Record<string, unknown>;

/** JSON text an answer carries as it is: the events tier holds queued events as text and
 * answers a long-poll without parsing them (see RawEvent). */
export class JsonText {
  constructor(readonly text: string) {}

  /** Only a top-level field is spliced in as text (serialize); anywhere else it is parsed. */
  toJSON(): unknown {
    return JSON.parse(this.text) as unknown;
  }
}

/** A JSON array of items that are JSON text already. */
export function jsonArray(items: readonly string[]): JsonText {
  return new JsonText(`[${items.join(',')}]`);
}

export function sendSuccess(res: Response, data: Json = {}, ignored: string[] = []): void {
  const body: Json = { result: 'success', msg: '', ...data };
  // Zulip adds the list only to successful responses, and only when non-empty.
  if (ignored.length > 0) body.ignored_parameters_unsupported = ignored;
  writeJson(res, 200, serialize(body));
}

export function sendError(res: Response, error: JsonableError): void {
  res.set(error.headers);
  writeJson(res, error.httpStatus, JSON.stringify({ result: 'error', ...errorBody(error) }));
}

/** Sees every envelope answered (its JSON text): the tests hold each one to the OpenAPI
 * description (test/openapi-conformance.ts). */
export type AnswerObserver = (res: Response, status: number, text: string) => void;
let observer: AnswerObserver | undefined;

export function observeAnswers(observe: AnswerObserver): void {
  observer = observe;
}

/** What res.json would send, without its per-answer content-type parsing (a measurable share
 * of a long-poll answer's cost on the events tier). Unlike res.send it never answers 304 (no
 * ETags or dates are sent, so only `If-None-Match: *` could have matched), ignores the json
 * settings (none are set) and always says JSON. */
function writeJson(res: Response, status: number, text: string): void {
  observer?.(res, status, text);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

function serialize(body: Json): string {
  if (!Object.values(body).some((value) => value instanceof JsonText)) return JSON.stringify(body);
  const fields: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    const text = value instanceof JsonText ? value.text : JSON.stringify(value);
    // As JSON.stringify does: undefined (and functions) leave the field out.
    if (text !== undefined) fields.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${fields.join(',')}}`;
}
