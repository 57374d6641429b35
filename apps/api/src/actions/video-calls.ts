// Video calls (Zulip's zerver/views/video_calls.py and zerver/actions/video_calls.py): Zoom
// meetings for users who connected their Zoom account (their token in user_profile.zoom_token,
// announced by has_zoom_token events) or, with a server-to-server app, for any user Zoom knows
// by email; BigBlueButton and Jitsi Meet links, which need no stored state.
import {
  getPrisma,
  Prisma,
  runAction,
  type ActionContext,
  type Realm,
  type User,
} from '@parley/db';
import { JsonableError, ResourceNotFoundError } from '@parley/errors';
import { getRedis, zoomStateKey } from '@parley/events';
import { bigBlueButtonCallUrl, bigBlueButtonJoinUrl } from '../lib/bigbluebutton';
import { sendEventOnCommit } from '../lib/events';
import { jitsiCallUrl } from '../lib/video-calls';
import {
  createMeetingForEmail,
  createUserMeeting,
  exchangeZoomCode,
  fetchZoomUserId,
  InvalidZoomTokenError,
  invalidZoomSession,
  newZoomStateNonce,
  refreshZoomToken,
  revokeZoomToken,
  signZoomState,
  STATE_VALIDITY_SECONDS,
  zoomAuthorizeUrl,
  zoomMeetingPayload,
  zoomMode,
  zoomTokenExpired,
  type ZoomState,
  type ZoomToken,
} from '../lib/zoom';

/** POST /calls/{provider}/create for a provider this server has no route for. */
export function unknownCallProvider(name: string): JsonableError {
  return new ResourceNotFoundError(`Unknown video call provider '${name}'`);
}

/** Zulip's do_set_zoom_token: stores (or, with null, forgets) the user's token and tells their
 * clients whether they have one. */
export async function doSetZoomToken(
  ctx: ActionContext,
  user: Pick<User, 'id'>,
  token: ZoomToken | null,
): Promise<void> {
  await ctx.tx.user.update({
    where: { id: user.id },
    data: { zoomToken: token === null ? Prisma.DbNull : (token as Prisma.InputJsonObject) },
  });
  sendEventOnCommit(ctx, { type: 'has_zoom_token', value: token !== null }, [user.id]);
}

/** Forgets the user's token if it is still the one with this access token (compare and set):
 * a token another request stored meanwhile, refreshed or newly connected, is kept. Whether it
 * forgot the token. */
export async function doForgetZoomToken(
  ctx: ActionContext,
  user: Pick<User, 'id'>,
  accessToken: string,
): Promise<boolean> {
  const { count } = await ctx.tx.user.updateMany({
    where: { id: user.id, zoomToken: { path: ['access_token'], equals: accessToken } },
    data: { zoomToken: Prisma.DbNull },
  });
  if (count > 0) sendEventOnCommit(ctx, { type: 'has_zoom_token', value: false }, [user.id]);
  return count > 0;
}

function asZoomToken(value: unknown): ZoomToken | null {
  const token = value as ZoomToken | null | undefined;
  return token && typeof token.access_token === 'string' ? token : null;
}

/** The user's stored token, read from the row (the authentication cache's copy of the user may
 * predate the latest refresh). */
async function storedZoomToken(userId: number): Promise<ZoomToken | null> {
  const row = await getPrisma().user.findUnique({
    where: { id: userId },
    select: { zoomToken: true },
  });
  return asZoomToken(row?.zoomToken);
}

/** The same, with the user's row locked until the transaction ends: one refresh of a user's
 * token at a time. NO KEY UPDATE: rows referencing the user (their message copies, reactions
 * …) take KEY SHARE, which this does not block, so a slow refresh holds up only other writes
 * of the user's own row. */
async function lockedZoomToken(ctx: ActionContext, userId: number): Promise<ZoomToken | null> {
  const [row] = await ctx.tx.$queryRaw<{ zoom_token: unknown }[]>`
    SELECT zoom_token FROM user_profile WHERE id = ${userId} FOR NO KEY UPDATE`;
  return asZoomToken(row?.zoom_token);
}

function requireZoom(): 'user' | 'server' {
  const mode = zoomMode();
  if (mode === null) throw new JsonableError('Zoom credentials have not been configured');
  return mode;
}

/** GET /calls/zoom/register: where to send the user's browser to authorize the app. The
 * state's nonce is kept in Redis (naming the user) until the flow completes or expires. */
export async function startZoomAuthorization(user: User, realm: Realm): Promise<string> {
  requireZoom();
  const nonce = newZoomStateNonce();
  await getRedis().set(zoomStateKey(nonce), String(user.id), 'EX', STATE_VALIDITY_SECONDS);
  return zoomAuthorizeUrl(signZoomState(realm.stringId, user.id, nonce));
}

/** GET /calls/zoom/complete, on the organization's host: Zoom's redirect back with a code, for
 * `user`, whom the request authenticated. Zulip's complete_user checks that the state's sid is
 * the logged-in session's; here the state must name this very user, and its nonce must be
 * unused: a flow completes once, and only for the person who started it, whoever approved it
 * on Zoom's page. */
export async function completeZoomAuthorization(
  user: User,
  state: ZoomState,
  code: string,
): Promise<void> {
  requireZoom();
  if (state.userId !== user.id) throw invalidZoomSession();
  // Consumed atomically: of two requests with the same state, one goes on.
  if ((await getRedis().del(zoomStateKey(state.nonce))) !== 1) throw invalidZoomSession();
  const token = await exchangeZoomCode(code);
  // Remembered so the deauthorization webhook, which names the Zoom user, finds the token.
  const zoomUserId = await fetchZoomUserId(token.access_token);
  if (zoomUserId !== null) token.zoom_user_id = zoomUserId;
  await runAction((ctx) => doSetZoomToken(ctx, user, token));
}

/** Forgets a token Zoom no longer accepts (Zulip's update_token(user, None)), unless another
 * request has replaced it meanwhile. */
async function forgetZoomToken(
  user: Pick<User, 'id'>,
  token: ZoomToken,
): Promise<InvalidZoomTokenError> {
  await runAction((ctx) => doForgetZoomToken(ctx, user, token.access_token));
  return new InvalidZoomTokenError();
}

/** A usable access token: the stored one, refreshed first if it has expired. Zoom's refresh
 * tokens work once, so refreshes of one user are serialized: the user's row stays locked from
 * reading the token to storing its successor (the lock is held over Zoom's answer, at most
 * its 5-second timeout). A request that waited for the lock reads the token the first one
 * stored instead of spending the same refresh token again. */
async function currentZoomToken(user: Pick<User, 'id'>): Promise<ZoomToken> {
  const token = await storedZoomToken(user.id);
  if (!token) throw new InvalidZoomTokenError();
  if (!zoomTokenExpired(token)) return token;
  const fresh = await runAction(async (ctx) => {
    const current = await lockedZoomToken(ctx, user.id);
    if (!current || !zoomTokenExpired(current)) return current;
    const refreshed = await refreshZoomToken(current);
    // Zulip's token_updater stores the refreshed token with do_set_zoom_token (and its
    // event); a refused refresh forgets the token (the row is locked: it is still this one).
    if (refreshed) await doSetZoomToken(ctx, user, refreshed);
    else await doForgetZoomToken(ctx, user, current.access_token);
    return refreshed;
  });
  if (!fresh) throw new InvalidZoomTokenError();
  return fresh;
}

/** POST /calls/zoom/create: a meeting with video on or off as the call type says. */
export async function createZoomCall(user: User, isVideoCall: boolean): Promise<string> {
  const payload = zoomMeetingPayload(isVideoCall);
  if (requireZoom() === 'server') return createMeetingForEmail(user.deliveryEmail, payload);
  const token = await currentZoomToken(user);
  const answer = await createUserMeeting(token.access_token, payload);
  if (answer.ok) return answer.joinUrl;
  // The user removed the app, or Zoom revoked the token.
  if (answer.status === 401) throw await forgetZoomToken(user, token);
  throw new JsonableError('Failed to create Zoom call');
}

/** DELETE /calls/zoom/token: the user disconnects their Zoom account. Zoom is asked to revoke
 * the token; it is forgotten here whatever Zoom answers. */
export async function revokeZoomAuthorization(user: User): Promise<void> {
  const token = await storedZoomToken(user.id);
  if (!token) return;
  if (zoomMode() !== null) await revokeZoomToken(token);
  await runAction((ctx) => doSetZoomToken(ctx, user, null));
}

/** Zoom's app_deauthorized webhook: the Zoom user removed the app, so every token of theirs
 * is forgotten (has_zoom_token false for each Parley user who had one). */
export async function deauthorizeZoomUser(zoomUserId: string): Promise<number> {
  const users = await getPrisma().user.findMany({
    where: { zoomToken: { path: ['zoom_user_id'], equals: zoomUserId } },
    select: { id: true },
  });
  if (users.length === 0) return 0;
  await runAction(async (ctx) => {
    for (const user of users) await doSetZoomToken(ctx, user, null);
  });
  return users.length;
}

/** GET /calls/bigbluebutton/create: a signed link; the meeting is made when it is opened. */
export function createBigBlueButtonCall(
  user: User,
  meetingName: string,
  voiceOnly: boolean,
): string {
  return bigBlueButtonCallUrl(user.id, meetingName, voiceOnly);
}

/** GET /calls/bigbluebutton/join: the BigBlueButton server's join URL for this user. */
export function joinBigBlueButtonCall(user: User, signed: string): Promise<string> {
  return bigBlueButtonJoinUrl(signed, user);
}

/** POST /calls/jitsi_meet/create: a room on the organization's Jitsi Meet server. */
export function createJitsiCall(realm: Realm, isVideoCall: boolean): string {
  return jitsiCallUrl(realm, isVideoCall);
}
