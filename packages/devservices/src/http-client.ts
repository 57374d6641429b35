// A tiny HTTP client for the topology test and the benchmarks: any Host header (fetch refuses
// to set one), Basic credentials, form bodies, and the raw answer kept when it is not JSON.
import { request, type Agent } from 'node:http';
import { connect } from 'node:net';

export interface Credentials {
  deliveryEmail: string;
  apiKey: string;
}

export interface JsonAnswer {
  status: number;
  /** null when the answer was not JSON (the caller decides whether that is a failure). */
  body: Record<string, unknown> | null;
  raw: string;
  headers: Record<string, string | string[] | undefined>;
}

export function requestJson(
  base: string,
  options: {
    host: string;
    user: Credentials;
    method: string;
    path: string;
    form?: Record<string, string>;
    agent?: Agent;
    /** Gives up (rejecting with a TimeoutError) when the whole answer takes longer. */
    timeoutMs?: number;
  },
): Promise<JsonAnswer> {
  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  const { deliveryEmail, apiKey } = options.user;
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(options.path, base),
      {
        method: options.method,
        agent: options.agent,
        headers: {
          Host: options.host,
          Authorization: `Basic ${Buffer.from(`${deliveryEmail}:${apiKey}`).toString('base64')}`,
          ...(body
            ? {
                'Content-Type': 'application/x-www-form-urlencoded',
                'Content-Length': Buffer.byteLength(body),
              }
            : {}),
        },
      },
      (res) => {
        let raw = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (raw += chunk));
        res.on('end', () => {
          let parsed: Record<string, unknown> | null = null;
          if (String(res.headers['content-type']).startsWith('application/json')) {
            try {
              parsed = JSON.parse(raw) as Record<string, unknown>;
            } catch {
              parsed = null;
            }
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, raw, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    if (options.timeoutMs !== undefined) {
      const timer = setTimeout(() => {
        const error = new Error(`no answer within ${options.timeoutMs} ms`);
        error.name = 'TimeoutError';
        req.destroy(error);
      }, options.timeoutMs);
      req.on('close', () => clearTimeout(timer));
    }
    req.end(body);
  });
}

/** Sends `bytes` as they are on a connection of its own (requests no HTTP client would send:
 * malformed, oversized) and reads the answer until the server closes the connection. */
export function rawHttp(
  host: string,
  port: number,
  bytes: string,
): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host, () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const head = end < 0 ? text : text.slice(0, end);
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
        head,
        body: end < 0 ? '' : text.slice(end + 4),
      });
    });
  });
}
