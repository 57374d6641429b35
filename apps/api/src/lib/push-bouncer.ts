// The client of Zulip's push notification service (the "bouncer", Zulip's
// zerver/lib/remote_server.py send_to_push_bouncer): requests to
// {PUSH_BOUNCER_URL}/api/v1/remotes/<endpoint> with HTTP Basic as the registered server
// (ZULIP_ORG_ID, ZULIP_ORG_KEY). Used when PUSH_TRANSPORT=bouncer.
import { createHash } from 'node:crypto';
import { getConfig, ZULIP_VERSION } from '@parley/config';

/** A failure worth trying again later: a 5xx answer (`reached`) or no answer at all. */
export class PushRetryLaterError extends Error {
  constructor(
    message: string,
    readonly reached = false,
  ) {
    super(message);
  }
}

export interface BouncerAnswer {
  status: number;
  text: string;
}

/** Posts to the bouncer: JSON (Zulip's send_json_to_push_bouncer) or a form (its
 * send_to_push_bouncer). Throws PushRetryLaterError on a network failure or a 5xx; a 4xx is
 * returned for the caller to report (trying again would not help). */
export async function postToBouncer(
  endpoint: string,
  body: { json: Record<string, unknown> } | { form: Record<string, string> },
  { timeoutMs = 30_000 }: { timeoutMs?: number } = {},
): Promise<BouncerAnswer> {
  const config = getConfig();
  const url = `${config.PUSH_BOUNCER_URL.replace(/\/+$/, '')}/api/v1/remotes/${endpoint}`;
  const credentials = Buffer.from(`${config.ZULIP_ORG_ID}:${config.ZULIP_ORG_KEY}`).toString(
    'base64',
  );
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Basic ${credentials}`,
        'content-type': 'json' in body ? 'application/json' : 'application/x-www-form-urlencoded',
        'user-agent': `ZulipServer/${ZULIP_VERSION}`,
      },
      body: 'json' in body ? JSON.stringify(body.json) : new URLSearchParams(body.form).toString(),
      signal: AbortSignal.timeout(timeoutMs),
    });
    // The timeout covers the body too: a body cut off is no answer either.
    text = await response.text();
  } catch (error) {
    throw new PushRetryLaterError(`push bouncer unreachable: ${String(error)}`);
  }
  if (response.status >= 500)
    throw new PushRetryLaterError(`push bouncer answered ${response.status}`, true);
  return { status: response.status, text };
}

/** What a 4xx answer of the bouncer says: Zulip's error `code` and `msg` when its body is
 * Zulip's JSON envelope; otherwise no code, and the HTTP status as the message. */
export function bouncerRefusal(answer: BouncerAnswer): { code: string | null; msg: string } {
  let body: unknown = null;
  try {
    body = JSON.parse(answer.text);
  } catch {
    // Not JSON: described by its status.
  }
  const { code, msg } = (typeof body === 'object' && body !== null ? body : {}) as {
    code?: unknown;
    msg?: unknown;
  };
  return {
    code: typeof code === 'string' ? code : null,
    msg: typeof msg === 'string' ? msg : `HTTP ${answer.status}`,
  };
}

/** A stable UUID (version 5 layout) for one of this server's users or organizations: the
 * bouncer knows them by UUID, which Parley's rows do not carry. Derived from ZULIP_ORG_ID, so
 * it stays the same as long as the server's registration does. */
export function serverScopedUuid(kind: 'user' | 'realm', id: number): string {
  const orgId = getConfig().ZULIP_ORG_ID ?? '';
  const bytes = createHash('sha1').update(`${orgId}:${kind}:${id}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function usesBouncer(): boolean {
  return getConfig().PUSH_TRANSPORT === 'bouncer';
}
