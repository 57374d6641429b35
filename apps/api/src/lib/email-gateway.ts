// The addresses that post to a channel by email (Zulip's zerver/lib/email_mirror_helpers.py):
// EMAIL_GATEWAY_PATTERN with `%s` standing for `<channel slug>.<token>[.<option>…]`. The token
// names a row of channel_email_address (channel, who asked for the address, who the messages
// come from); the options say how a mail becomes a message.
import { randomBytes } from 'node:crypto';
import { getConfig } from '@parley/config';
import { columnsOf, query, statement, type ChannelEmailAddress } from '@parley/db';
import { codePoints, escapeRegExp } from './text';

/** The options an address may carry after its token, as Zulip's optional_address_tokens. */
export interface AddressOptions {
  show_sender?: boolean;
  include_footer?: boolean;
  include_quotes?: boolean;
  prefer_text?: boolean;
}

const OPTION_TOKENS: Record<string, (options: AddressOptions) => void> = {
  'show-sender': (options) => (options.show_sender = true),
  'include-footer': (options) => (options.include_footer = true),
  'include-quotes': (options) => (options.include_quotes = true),
  'prefer-text': (options) => (options.prefer_text = true),
  'prefer-html': (options) => (options.prefer_text = false),
};

/** sysexits(3) statuses, which a mail server reads from the command it pipes mail to: 75
 * (EX_TEMPFAIL) tries again later, the others return the mail to its sender. */
export const EX_DATAERR = 65;
export const EX_NOUSER = 67;
export const EX_NOPERM = 77;
export const EX_TEMPFAIL = 75;

/** Why a mail cannot be delivered (Zulip's ZulipEmailForwardError), with the sysexits status
 * that says so to the mail server: an address it does not know by default. */
export class EmailForwardError extends Error {
  constructor(
    message: string,
    readonly status = EX_NOUSER,
  ) {
    super(message);
  }
}

/** Django's slugify: ASCII only (accents dropped), lower case, runs of spaces and hyphens made
 * one hyphen, other punctuation dropped, no hyphen or underscore at either end. */
function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[^\p{ASCII}]/gu, '')
    .toLowerCase()
    .replace(/[^\w\s-]/g, '')
    .replace(/[-\s]+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '');
}

/** Zulip's encode_email_address: "" when the server has no gateway. The channel's name leads
 * the address when it survives as ASCII unchanged in length (else it would be mangled, and is
 * left out); the token follows. */
export function encodeEmailAddress(
  channelName: string,
  token: string,
  showSender: boolean,
): string {
  const pattern = getConfig().EMAIL_GATEWAY_PATTERN;
  if (pattern === '') return '';
  const name = channelName.replace(/[^\p{L}\p{N}_]+/gu, '-');
  const slug = slugify(name);
  // Counted in characters, as Python counts them (the slug is ASCII).
  let local = slug !== '' && slug.length === codePoints(name) ? `${slug}.${token}` : token;
  if (showSender) local += '.show-sender';
  return pattern.replace('%s', local);
}

/** The part of an address of this gateway that EMAIL_GATEWAY_PATTERN's `%s` stands for
 * (Zulip's get_email_gateway_message_string_from_address). */
function gatewayPart(address: string): string {
  const pattern = getConfig().EMAIL_GATEWAY_PATTERN;
  if (pattern === '')
    throw new EmailForwardError('This server is not configured for incoming email.');
  const [before, after] = pattern.split('%s').map(escapeRegExp) as [string, string];
  const match = new RegExp(`^${before}(.*?)${after}$`, 'i').exec(address.trim());
  if (!match) throw new EmailForwardError('Address not recognized by gateway.');
  return match[1]!;
}

/** Zulip's decode_email_address: the token and options of an address of this gateway. `+`
 * separates them as well as `.` (older addresses used it). */
export function decodeEmailAddress(address: string): { token: string; options: AddressOptions } {
  const options: AddressOptions = {};
  const rest: string[] = [];
  for (const part of gatewayPart(address).replaceAll('.', '+').split('+')) {
    const option = OPTION_TOKENS[part];
    if (option) option(options);
    else rest.push(part);
  }
  // What is left is the token, or the channel's name and the token.
  const token = rest.length === 1 ? rest[0]! : (rest[1] ?? '');
  return { token, options };
}

/** Zulip's is_missed_message_address and get_missed_message_token_from_address: the token of
 * a missed-message email's reply address (`mm` and 32 more characters), else null. */
export function missedMessageToken(address: string): string | null {
  let part: string;
  try {
    part = gatewayPart(address);
  } catch {
    return null;
  }
  return part.startsWith('mm') && part.length === 34 ? part : null;
}

/** Zulip's generate_missed_message_token. */
export function newMissedMessageToken(): string {
  return `mm${randomBytes(16).toString('hex')}`;
}

/** A missed-message reply address, "" when the server has no gateway. */
export function missedMessageAddress(token: string): string {
  const pattern = getConfig().EMAIL_GATEWAY_PATTERN;
  return pattern === '' ? '' : pattern.replace('%s', token);
}

const insertAddress = statement<Record<string, never>, [number, number, number, number, string]>(`
  INSERT INTO channel_email_address (realm_id, channel_id, creator_id, sender_id, email_token)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (channel_id, creator_id, sender_id) DO NOTHING`);

const tokenOf = statement<{ emailToken: string }, [number, number, number]>(`
  SELECT email_token AS "emailToken" FROM channel_email_address
  WHERE channel_id = $1 AND creator_id = $2 AND sender_id = $3`);

/** Zulip's get_channel_email_token: the token of this channel, creator and sender, made the
 * first time it is asked for (a concurrent first request makes the same one). */
export async function channelEmailToken(
  realmId: number,
  channelId: number,
  creatorId: number,
  senderId: number,
): Promise<string> {
  // Zulip's generate_email_token_for_stream: 32 hexadecimal digits.
  const token = randomBytes(16).toString('hex');
  await query(insertAddress, [realmId, channelId, creatorId, senderId, token]);
  const [row] = await query(tokenOf, [channelId, creatorId, senderId]);
  return row!.emailToken;
}

const addressByToken = statement<ChannelEmailAddress, [string]>(`
  SELECT ${columnsOf('ChannelEmailAddress', 'a')} FROM channel_email_address a
  WHERE a.email_token = $1 AND NOT a.deactivated`);

/** Zulip's decode_stream_email_address: the address's row and options. */
export async function channelEmailAddressOf(
  address: string,
): Promise<{ row: ChannelEmailAddress; options: AddressOptions }> {
  const { token, options } = decodeEmailAddress(address);
  const [row] = await query(addressByToken, [token]);
  if (!row) throw new EmailForwardError(`Bad stream token from email recipient ${address}`);
  return { row, options };
}
