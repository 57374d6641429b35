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
import { bigBlueButtonCallUrl, bigBlueButtonJoinUrl } from '../lib/bigbluebutton';
import { sendEventOnCommit } from '../lib/events';
import { jitsiCallUrl } from '../lib/video-calls';
import {
  createMeetingForEmail,
  createUserMeeting,
  exchangeZoomCode,
  fetchZoomUserId,
  InvalidZoomTokenError,
  refreshZoomToken,
  revokeZoomToken,
  signZoomState,
  verifyZoomState,
  zoomAuthorizeUrl,
  zoomMeetingPayload,
  zoomMode,
  zoomTokenExpired,
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

/** The user's stored token, read from the row (the authentication cache's copy of the user may
 * predate the latest refresh). */
async function storedZoomToken(userId: number): Promise<ZoomToken | null> {
  const row = await getPrisma().user.findUnique({
    where: { id: userId },
    select: { zoomToken: true },
  });
  const token = row?.zoomToken as ZoomToken | null | undefined;
  return token && typeof token.access_token === 'string' ? token : null;
}

function requireZoom(): 'user' | 'server' {
  const mode = zoomMode();
  if (mode === null) throw new JsonableError('Zoom credentials have not been configured');
  return mode;
}

/** GET /calls/zoom/register: where to send the user's browser to authorize the app. */
export function startZoomAuthorization(user: User, realm: Realm): string {
  requireZoom();
  return zoomAuthorizeUrl(signZoomState(realm.stringId, user.id));
}

/** GET /calls/zoom/complete: Zoom's redirect back with a code for the user the state names. */
export async function completeZoomAuthorization(state: unknown, code: string): Promise<void> {
  requireZoom();
  const invalid = () => new JsonableError('Invalid Zoom session identifier');
  const signed = verifyZoomState(state);
  if (!signed) throw invalid();
  const user = await getPrisma().user.findFirst({
    where: {
      id: signed.userId,
      isActive: true,
      realm: { stringId: signed.realm, deactivated: false },
    },
    select: { id: true },
  });
  if (!user) throw invalid();
  const token = await exchangeZoomCode(code);
  // Remembered so the deauthorization webhook, which names the Zoom user, finds the token.
  const zoomUserId = await fetchZoomUserId(token.access_token);
  if (zoomUserId !== null) token.zoom_user_id = zoomUserId;
  await runAction((ctx) => doSetZoomToken(ctx, user, token));
}

/** Forgets a token Zoom no longer accepts (Zulip's update_token(user, None)). */
async function forgetZoomToken(user: Pick<User, 'id'>): Promise<InvalidZoomTokenError> {
  await runAction((ctx) => doSetZoomToken(ctx, user, null));
  return new InvalidZoomTokenError();
}

/** A usable access token: the stored one, refreshed first if it has expired. */
async function currentZoomToken(user: Pick<User, 'id'>): Promise<ZoomToken> {
  const token = await storedZoomToken(user.id);
  if (!token) throw new InvalidZoomTokenError();
  if (!zoomTokenExpired(token)) return token;
  const fresh = await refreshZoomToken(token);
  if (!fresh) {
    // Zoom's refresh tokens work once: a request of the same user that refreshed first has
    // stored the new token, which is good.
    const latest = await storedZoomToken(user.id);
    if (latest && latest.access_token !== token.access_token && !zoomTokenExpired(latest))
      return latest;
    throw await forgetZoomToken(user);
  }
  // Zulip's token_updater stores the refreshed token with do_set_zoom_token (and its event).
  await runAction((ctx) => doSetZoomToken(ctx, user, fresh));
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
  if (answer.status === 401) throw await forgetZoomToken(user);
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
