// The client of Zoom's OAuth and meetings API (Zulip's zerver/views/video_calls.py: its
// ZoomGeneralOAuthProvider for apps users authorize, and the server-to-server account
// credentials grant). Only outbound HTTP and pure helpers here: storing a user's token is
// actions/video-calls.ts's.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { getConfig, ZULIP_VERSION } from '@parley/config';
import { JsonableError } from '@parley/errors';
import { getLogger } from '@parley/logger';

/** Zulip's VideoCallSession timeout: a meeting link is asked for while the user waits. */
const TIMEOUT_MS = 5_000;
/** How long a /calls/zoom/register state stays valid: one trip through Zoom's consent page. */
export const STATE_VALIDITY_SECONDS = 3600;
/** Zulip caches a server-to-server token for 3600 - 240 seconds of Zoom's hour: it is not
 * used in its last minutes, when a meeting request could outlive it. */
const SERVER_TOKEN_MARGIN_SECONDS = 240;

/** A user's token as Zoom's token endpoint returned it, plus `expires_at` (seconds since the
 * epoch, as requests-oauthlib stores it) and the Zoom user id the deauthorization webhook
 * names. Stored in user_profile.zoom_token. */
export interface ZoomToken {
  access_token: string;
  refresh_token?: string;
  token_type?: string;
  expires_in?: number;
  expires_at?: number;
  scope?: string;
  zoom_user_id?: string;
  [key: string]: unknown;
}

export class InvalidZoomTokenError extends JsonableError {
  override readonly code = 'INVALID_ZOOM_TOKEN';
  constructor() {
    super('Invalid Zoom access token');
  }
}

export class UnknownZoomUserError extends JsonableError {
  override readonly code = 'UNKNOWN_ZOOM_USER';
  constructor() {
    super('Unknown Zoom user email');
  }
}

/** Which Zoom integration the server has: Zulip offers one of the two at a time. */
export function zoomMode(): 'user' | 'server' | null {
  const config = getConfig();
  if (!config.VIDEO_ZOOM_CLIENT_ID || !config.VIDEO_ZOOM_CLIENT_SECRET) return null;
  return config.VIDEO_ZOOM_SERVER_TO_SERVER_ACCOUNT_ID ? 'server' : 'user';
}

function credentials(): { clientId: string; clientSecret: string } {
  const config = getConfig();
  if (!config.VIDEO_ZOOM_CLIENT_ID || !config.VIDEO_ZOOM_CLIENT_SECRET)
    throw new JsonableError('Zoom credentials have not been configured');
  return { clientId: config.VIDEO_ZOOM_CLIENT_ID, clientSecret: config.VIDEO_ZOOM_CLIENT_SECRET };
}

function basicAuth(): string {
  const { clientId, clientSecret } = credentials();
  return `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
}

const oauthUrl = (path: string) => new URL(path, getConfig().VIDEO_ZOOM_OAUTH_URL).toString();
const apiUrl = (path: string) => new URL(path, getConfig().VIDEO_ZOOM_API_URL).toString();

/** Where Zoom sends the browser back: one fixed URL (Zoom accepts only the redirect URLs
 * registered with the app), on the server's root domain like Zulip's ROOT_DOMAIN_URI. */
export function zoomRedirectUri(): string {
  const config = getConfig();
  return `${config.EXTERNAL_URL_SCHEME}://${config.EXTERNAL_HOST}/calls/zoom/complete`;
}

/** Zulip's state is {"realm", "sid"}, its sid an HMAC of the browser's CSRF cookie, and
 * /calls/zoom/complete requires the logged-in session whose sid matches. Parley has no browser
 * sessions: its sid names the user, an expiry and a random nonce, signed with the app's client
 * secret (which only this server and Zoom know). The nonce is stored in Redis when the flow
 * starts and consumed when it completes, so a state works once; and the request completing
 * the flow must be authenticated as the user the state names (actions/video-calls.ts), so
 * nobody else's approval on Zoom's consent page can reach that user's account. */
function stateMac(realm: string, userId: number, expires: number, nonce: string): string {
  return createHmac('sha256', credentials().clientSecret)
    .update(`Parley Zoom sid\n${realm}\n${userId}\n${expires}\n${nonce}`)
    .digest('hex');
}

/** What a valid state names. */
export interface ZoomState {
  realm: string;
  userId: number;
  nonce: string;
}

export function signZoomState(
  realm: string,
  userId: number,
  nonce: string,
  now = Date.now(),
): string {
  const expires = Math.floor(now / 1000) + STATE_VALIDITY_SECONDS;
  const mac = stateMac(realm, userId, expires, nonce);
  return JSON.stringify({ realm, sid: `${userId}.${expires}.${nonce}.${mac}` });
}

/** A new state's nonce (the key of its Redis entry). */
export function newZoomStateNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** What a state names, or null when it is malformed, forged or expired. Whether its nonce is
 * still unused is for Redis to say. */
export function verifyZoomState(state: unknown, now = Date.now()): ZoomState | null {
  if (typeof state !== 'object' || state === null) return null;
  const { realm, sid } = state as Record<string, unknown>;
  if (typeof realm !== 'string' || typeof sid !== 'string') return null;
  const match = /^(\d{1,10})\.(\d{1,12})\.([\w-]{22})\.([0-9a-f]{64})$/.exec(sid);
  if (!match) return null;
  const userId = Number(match[1]);
  const expires = Number(match[2]);
  const nonce = match[3]!;
  const expected = Buffer.from(stateMac(realm, userId, expires, nonce), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(match[4]!, 'hex'))) return null;
  if (expires < now / 1000) return null;
  return { realm, userId, nonce };
}

/** Zulip's error for a state that is malformed, forged, expired, spent or someone else's. */
export function invalidZoomSession(): JsonableError {
  return new JsonableError('Invalid Zoom session identifier');
}

/** The `state` parameter of Zoom's redirect back (JSON text), checked as far as its signature
 * and expiry go. */
export function parseZoomState(text: string, now = Date.now()): ZoomState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidZoomSession();
  }
  const state = verifyZoomState(parsed, now);
  if (!state) throw invalidZoomSession();
  return state;
}

/** Zoom's authorize page for a user of `realm` (requests-oauthlib's authorization_url). */
export function zoomAuthorizeUrl(state: string): string {
  const url = new URL(oauthUrl('/oauth/authorize'));
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', credentials().clientId);
  url.searchParams.set('redirect_uri', zoomRedirectUri());
  url.searchParams.set('state', state);
  return url.toString();
}

interface Answer {
  status: number;
  body: unknown;
}

/** One request to Zoom; null when Zoom could not be reached in time. */
async function call(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
): Promise<Answer | null> {
  try {
    const response = await fetch(url, {
      ...init,
      headers: { 'user-agent': `ZulipServer/${ZULIP_VERSION}`, ...init.headers },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const text = await response.text();
    let body: unknown = null;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      // Zoom answers JSON; anything else is kept as nothing to read.
    }
    return { status: response.status, body };
  } catch (error) {
    getLogger().warn('Zoom unreachable', { url: new URL(url).origin, error: String(error) });
    return null;
  }
}

const form = (values: Record<string, string>) => ({
  'content-type': 'application/x-www-form-urlencoded',
  body: new URLSearchParams(values).toString(),
});

/** A token answer with the expiry stored as a time (requests-oauthlib's expires_at). */
function tokenFrom(answer: Answer | null, now: number): ZoomToken | null {
  if (!answer || answer.status !== 200) return null;
  const token = answer.body as Partial<ZoomToken> | null;
  if (!token || typeof token.access_token !== 'string') return null;
  const result: ZoomToken = { ...token, access_token: token.access_token };
  if (typeof token.expires_in === 'number') result.expires_at = now / 1000 + token.expires_in;
  return result;
}

async function tokenEndpointAnswer(values: Record<string, string>): Promise<Answer | null> {
  const { 'content-type': contentType, body } = form(values);
  return call(oauthUrl('/oauth/token'), {
    method: 'POST',
    headers: { authorization: basicAuth(), 'content-type': contentType },
    body,
  });
}

/** The authorization code grant (/calls/zoom/complete). */
export async function exchangeZoomCode(code: string, now = Date.now()): Promise<ZoomToken> {
  const answer = await tokenEndpointAnswer({
    grant_type: 'authorization_code',
    code,
    redirect_uri: zoomRedirectUri(),
  });
  const token = tokenFrom(answer, now);
  if (!token) throw new JsonableError('Invalid Zoom credentials');
  return token;
}

/** Whether the access token has expired (requests-oauthlib's check before each request). */
export function zoomTokenExpired(token: ZoomToken, now = Date.now()): boolean {
  return typeof token.expires_at === 'number' && token.expires_at < now / 1000;
}

/** The refresh token grant; null when Zoom refuses it (the user must connect again). */
export async function refreshZoomToken(
  token: ZoomToken,
  now = Date.now(),
): Promise<ZoomToken | null> {
  if (typeof token.refresh_token !== 'string') return null;
  const answer = await tokenEndpointAnswer({
    grant_type: 'refresh_token',
    refresh_token: token.refresh_token,
  });
  // Only OAuth's refusals (400 invalid_grant, 401 invalid_client) say the grant is gone.
  // Anything else (Zoom unreachable, failing, throttling, an unreadable answer) says nothing
  // about it: this call fails and the token is kept (a refresh token Zoom did not take stays
  // good; one it took before its answer was lost fails the next refresh with a refusal).
  if (answer?.status === 400 || answer?.status === 401) return null;
  const fresh = tokenFrom(answer, now);
  if (!fresh) throw new JsonableError('Failed to create Zoom call');
  // Zoom sends a new refresh token with every refresh; the Zoom user is the same.
  return { ...fresh, zoom_user_id: token.zoom_user_id };
}

/** The Zoom user a new token belongs to (GET /v2/users/me), which the deauthorization webhook
 * names; null if Zoom does not say (the token is stored all the same). */
export async function fetchZoomUserId(accessToken: string): Promise<string | null> {
  const answer = await call(apiUrl('/v2/users/me'), {
    method: 'GET',
    headers: { authorization: `Bearer ${accessToken}` },
  });
  const id = (answer?.status === 200 ? (answer.body as { id?: unknown } | null) : null)?.id;
  return typeof id === 'string' ? id : null;
}

/** Tells Zoom the user's token is no longer wanted (POST /oauth/revoke). The local copy is
 * forgotten whatever Zoom answers, so a failure is only logged. */
export async function revokeZoomToken(token: ZoomToken): Promise<void> {
  const { 'content-type': contentType, body } = form({ token: token.access_token });
  const answer = await call(oauthUrl('/oauth/revoke'), {
    method: 'POST',
    headers: { authorization: basicAuth(), 'content-type': contentType },
    body,
  });
  if (answer?.status !== 200)
    getLogger().warn('Zoom token revocation failed', { status: answer?.status ?? null });
}

/** Zulip's ZoomPayload: the host's and participants' video on or off as the call type says;
 * a default password, without which organizations requiring authentication force the waiting
 * room on. */
export function zoomMeetingPayload(isVideoCall: boolean): Record<string, unknown> {
  return {
    settings: { host_video: isVideoCall, participant_video: isVideoCall },
    default_password: true,
  };
}

export type MeetingAnswer =
  | { ok: true; joinUrl: string }
  | { ok: false; status: number | null; code: unknown; message: unknown };

async function postMeeting(
  path: string,
  accessToken: string,
  payload: Record<string, unknown>,
): Promise<MeetingAnswer> {
  const answer = await call(apiUrl(path), {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
  const body = (answer?.body ?? null) as Record<string, unknown> | null;
  if (answer && answer.status >= 200 && answer.status < 300 && typeof body?.join_url === 'string')
    return { ok: true, joinUrl: body.join_url };
  return { ok: false, status: answer?.status ?? null, code: body?.code, message: body?.message };
}

/** A meeting hosted by the user whose token this is (POST /v2/users/me/meetings). */
export function createUserMeeting(
  accessToken: string,
  payload: Record<string, unknown>,
): Promise<MeetingAnswer> {
  return postMeeting('/v2/users/me/meetings', accessToken, payload);
}

// The server-to-server token, kept in this process like Zulip's cache entry (Zoom lets several
// tokens of one account be valid at once, so each replica may hold its own).
let serverToken: { accountId: string; token: string; validUntil: number } | null = null;

/** The account credentials grant (Zulip's get_zoom_server_to_server_access_token). */
export async function serverToServerAccessToken(now = Date.now()): Promise<string> {
  credentials();
  const accountId = getConfig().VIDEO_ZOOM_SERVER_TO_SERVER_ACCOUNT_ID!;
  if (serverToken && serverToken.accountId === accountId && serverToken.validUntil > now)
    return serverToken.token;
  const token = tokenFrom(
    await tokenEndpointAnswer({ grant_type: 'account_credentials', account_id: accountId }),
    now,
  );
  // {reason: 'Bad request', error: 'invalid_request'} for an unknown account id;
  // {error: 'invalid_client'} for a wrong client id or secret.
  if (!token) throw new JsonableError('Invalid Zoom credentials');
  const lifetime = (token.expires_in ?? 3600) - SERVER_TOKEN_MARGIN_SECONDS;
  serverToken = { accountId, token: token.access_token, validUntil: now + lifetime * 1000 };
  return token.access_token;
}

/** Forgets the server-to-server token (Zoom called it invalid or expired). */
export function flushServerToServerToken(): void {
  serverToken = null;
}

/** A meeting hosted by the Zoom user with this email address in the server's account (Zulip's
 * get_zoom_server_to_server_call). */
export async function createMeetingForEmail(
  email: string,
  payload: Record<string, unknown>,
): Promise<string> {
  const accessToken = await serverToServerAccessToken();
  const answer = await postMeeting(
    // Zulip puts the address in the path as it is; '@' is allowed in a path segment.
    `/v2/users/${encodeURIComponent(email).replaceAll('%40', '@')}/meetings`,
    accessToken,
    payload,
  );
  if (answer.ok) return answer.joinUrl;
  // {code: 1001, message: "User does not exist: {email}"}
  if (answer.code === 1001) throw new UnknownZoomUserError();
  if (answer.code === 124) {
    // "Invalid access token" / "Access token is expired": the expiry is managed here, so this
    // should not happen; forget the token so the next request fetches a new one.
    getLogger().error('Unexpected Zoom error 124', { message: String(answer.message) });
    flushServerToServerToken();
  }
  throw new JsonableError('Failed to create Zoom call');
}

/** Zoom's webhook signature (x-zm-signature: v0=HMAC-SHA256(secret token,
 * "v0:{x-zm-request-timestamp}:{raw body}")). */
export function zoomWebhookSignature(secret: string, timestamp: string, rawBody: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${rawBody}`).digest('hex')}`;
}

/** How far a webhook's timestamp may be from now: a captured request replayed later fails. */
const WEBHOOK_WINDOW_SECONDS = 300;

export function verifyZoomWebhook(
  secret: string,
  signature: string | undefined,
  timestamp: string | undefined,
  rawBody: string,
  now = Date.now(),
): boolean {
  // Zoom sends seconds since the epoch (10 digits); a timestamp in milliseconds (13 digits,
  // as the event_ts of Zoom's payloads) is accepted too. Any other length is refused: 11 or
  // 12 digits would be neither a time near now in seconds nor one in milliseconds.
  if (!signature || !timestamp || !/^(\d{1,10}|\d{13})$/.test(timestamp)) return false;
  const seconds = timestamp.length === 13 ? Number(timestamp) / 1000 : Number(timestamp);
  if (Math.abs(now / 1000 - seconds) > WEBHOOK_WINDOW_SECONDS) return false;
  const expected = Buffer.from(zoomWebhookSignature(secret, timestamp, rawBody));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The answer to Zoom's endpoint.url_validation event, which Zoom sends when the webhook URL
 * is saved and every few days after. */
export function zoomUrlValidation(secret: string, plainToken: string): Record<string, string> {
  return {
    plainToken,
    encryptedToken: createHmac('sha256', secret).update(plainToken).digest('hex'),
  };
}
