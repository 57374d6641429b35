// BigBlueButton calls as Zulip makes them (zerver/views/video_calls.py get_bigbluebutton_url
// and join_bigbluebutton): creating a call only signs a link to /calls/bigbluebutton/join;
// opening the link creates the meeting on the BigBlueButton server (its API's `create`, which
// is idempotent for a meeting id) and redirects to its `join` URL. Both API calls carry the
// checksum the BigBlueButton API asks for: SHA-256 of call name + query string + secret.
import { createHash, createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { getConfig, ZULIP_VERSION } from '@parley/config';
import { JsonableError } from '@parley/errors';

const TIMEOUT_MS = 5_000;

/** What a join link carries (Zulip's signed object, with its key names). */
export interface BigBlueButtonLink {
  meeting_id: string;
  name: string;
  lock_settings_disable_cam: boolean;
  /** The user who created the call: the meeting's moderator. */
  moderator: number;
}

export function bigBlueButtonConfigured(): boolean {
  const config = getConfig();
  return config.BIG_BLUE_BUTTON_URL !== undefined && config.BIG_BLUE_BUTTON_SECRET !== undefined;
}

function configured(): { url: string; secret: string } {
  const config = getConfig();
  if (!config.BIG_BLUE_BUTTON_URL || !config.BIG_BLUE_BUTTON_SECRET)
    throw new JsonableError('BigBlueButton is not configured.');
  return { url: config.BIG_BLUE_BUTTON_URL, secret: config.BIG_BLUE_BUTTON_SECRET };
}

/** Zulip signs the link with Django's Signer (SECRET_KEY) so a user cannot edit it to join
 * other meetings of the same server as moderator; Parley signs with a key derived from the
 * BigBlueButton secret, which only this server knows. */
function linkMac(payload: string, secret: string): string {
  return createHmac('sha256', `Parley BigBlueButton link\n${secret}`)
    .update(payload)
    .digest('base64url');
}

/** The path a new call's link opens: `/calls/bigbluebutton/join?bigbluebutton=…` (relative,
 * like Zulip's: clients resolve it against the organization's URL). */
export function bigBlueButtonCallUrl(
  userId: number,
  meetingName: string,
  voiceOnly: boolean,
): string {
  const { secret } = configured();
  const signed = signBigBlueButtonLink(
    {
      // Zulip's "zulip-" + random.randint(100000000000, 999999999999).
      meeting_id: `zulip-${randomInt(100_000_000_000, 1_000_000_000_000)}`,
      name: meetingName,
      lock_settings_disable_cam: voiceOnly,
      moderator: userId,
    },
    secret,
  );
  return `/calls/bigbluebutton/join?${new URLSearchParams({ bigbluebutton: signed }).toString()}`;
}

/** The link's `bigbluebutton` parameter: the object as base64url JSON, then its MAC. */
export function signBigBlueButtonLink(
  link: BigBlueButtonLink,
  secret = configured().secret,
): string {
  const payload = Buffer.from(JSON.stringify(link)).toString('base64url');
  return `${payload}.${linkMac(payload, secret)}`;
}

function unsign(signed: string, secret: string): BigBlueButtonLink {
  const [payload, mac, ...rest] = signed.split('.');
  const expected = Buffer.from(linkMac(payload ?? '', secret));
  const given = Buffer.from(mac ?? '');
  if (
    rest.length === 0 &&
    payload &&
    expected.length === given.length &&
    timingSafeEqual(expected, given)
  )
    return JSON.parse(Buffer.from(payload, 'base64url').toString()) as BigBlueButtonLink;
  throw new JsonableError('Invalid signature.');
}

/** Python's urllib.parse.quote with safe='': every byte but letters, digits and "_.-~" is
 * %-escaped (encodeURIComponent also leaves "!'()*" alone). */
function pyQuote(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** Python's urlencode(..., quote_via=quote): booleans as Python prints them (True/False), in
 * the order given, since the checksum covers the exact string. */
function pyUrlencode(values: [string, string | number | boolean][]): string {
  return values
    .map(([key, value]) => {
      const text = typeof value === 'boolean' ? (value ? 'True' : 'False') : String(value);
      return `${pyQuote(key)}=${pyQuote(text)}`;
    })
    .join('&');
}

export function bigBlueButtonChecksum(call: string, query: string, secret: string): string {
  return createHash('sha256').update(`${call}${query}${secret}`).digest('hex');
}

/** The text of an element of BigBlueButton's XML answer (a flat <response>): null if absent,
 * "" if empty. */
function element(xml: string, name: string): string | null {
  const match = new RegExp(`<${name}(?:\\s*/>|>([^<]*)</${name}>)`).exec(xml);
  if (!match) return null;
  return (match[1] ?? '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/** Opens a signed link for `viewer`: creates the meeting on the BigBlueButton server and
 * returns the URL of its join call, where the browser goes. */
export async function bigBlueButtonJoinUrl(
  signed: string,
  viewer: { id: number; fullName: string },
): Promise<string> {
  const { url, secret } = configured();
  const link = unsign(signed, secret);
  const createQuery = pyUrlencode([
    ['meetingID', link.meeting_id],
    ['name', link.name],
    ['lockSettingsDisableCam', link.lock_settings_disable_cam],
  ]);
  const createUrl = `${url}api/create?${createQuery}&checksum=${bigBlueButtonChecksum('create', createQuery, secret)}`;
  let xml: string;
  try {
    const response = await fetch(createUrl, {
      headers: { 'user-agent': `ZulipServer/${ZULIP_VERSION}` },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (!response.ok) throw new Error(`status ${response.status}`);
    xml = await response.text();
  } catch {
    throw new JsonableError('Error connecting to the BigBlueButton server.');
  }
  if (element(xml, 'messageKey') === 'checksumError')
    throw new JsonableError('Error authenticating to the BigBlueButton server.');
  const createTime = element(xml, 'createTime');
  if (element(xml, 'returncode') !== 'SUCCESS' || createTime === null)
    throw new JsonableError('BigBlueButton server returned an unexpected error.');
  const joinQuery = pyUrlencode([
    ['meetingID', link.meeting_id],
    // Only the creator moderates, so only they can turn a voice-only call into a video call.
    ['role', link.moderator === viewer.id ? 'MODERATOR' : 'VIEWER'],
    ['fullName', viewer.fullName],
    // Ties the join URL to this instance of the meeting: opening the same Zulip link later
    // re-creates the meeting on the server, with a new createTime.
    ['createTime', createTime],
  ]);
  return `${url}api/join?${joinQuery}&checksum=${bigBlueButtonChecksum('join', joinQuery, secret)}`;
}
