// Posting to a channel by email (Zulip's zerver/lib/email_mirror.py and the
// get_stream_email_address view): a channel's address for a user, and a mail delivered to such
// an address turned into a message. Mail reaches Parley through `pnpm manage email-mirror`,
// which a mail server pipes each message to (docs/email-gateway.md).
import PostalMime from 'postal-mime';
import TurndownService from 'turndown';
import { rateLimitEmailMirror } from '@parley/auth';
import { getPrisma, RecipientType, type Realm, type Stream, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { getLogger } from '@parley/logger';
import {
  channelEmailAddressOf,
  channelEmailToken,
  EmailForwardError,
  encodeEmailAddress,
  EX_DATAERR,
  EX_NOPERM,
  missedMessageToken,
  type AddressOptions,
} from '../lib/email-gateway';
import { groupConversationMembers } from '../lib/conversations';
import { truncateText, unprintablePosition } from '../lib/text';
import { accessBotById } from '../lib/users';
import {
  checkCanPost,
  checkContent,
  checkTopic,
  MAX_MESSAGE_LENGTH,
  prepareMessage,
  sendPreparedMessage,
} from './messages';
import { ensureSystemBot } from './system-bots';
import { isSystemBot } from '../lib/system-bots';
import { doUploadFile } from './uploads';

/** GET /streams/{id}/email_address: the address `user` may hand out, whose mail is posted by
 * `senderId`: the Email Gateway bot (the default), the user, or a bot the user administers. */
export async function channelEmailAddressFor(
  realm: Realm,
  stream: Stream,
  user: User,
  senderId: number | undefined,
): Promise<string> {
  const gateway = await ensureSystemBot(realm, 'emailGateway');
  let sender: User;
  if (senderId === undefined || senderId === gateway.id) sender = gateway;
  else if (senderId === user.id) sender = user;
  // Zulip's system bots live in an organization of their own, where access_bot_by_id does not
  // find them; Parley's are the organization's, owned by nobody.
  else sender = await accessBotById(user, senderId, { hidden: isSystemBot });
  const token = await channelEmailToken(realm.id, stream.id, user.id, sender.id);
  return encodeEmailAddress(stream.name, token, true);
}

/** Zulip's strip_from_subject: "Re:", "Fwd:" and their kin go. */
export function stripFromSubject(subject: string): string {
  return subject
    .replace(
      /([[(] *)?(?<![\p{L}\p{N}_])(RE|AW|SV|FWD?) *(\[\d+\])?([-:;)\]][ :;\])-]*|$)|\]+ *$/gimu,
      '',
    )
    .trim();
}

/** Zulip's is_forwarded: a forwarded mail keeps its quotations. (Python's `\b` knows every
 * script's letters: so does the lookbehind, where JavaScript's `\b` knows only ASCII.) */
export function isForwarded(subject: string): boolean {
  return /^(([[(] *)?(?<![\p{L}\p{N}_])(FWD?) *([-:;)\]][ :;\])-]*|$)|\]+ *$)/iu.test(subject);
}

/** Zulip's filter_footer: what follows a lone `--` line, when there is exactly one. */
function filterFooter(text: string): string {
  if (text.split('\n').filter((line) => line.trim() === '--').length !== 1) return text;
  return text.split(/^\s*--\s*$/m)[0]!.trim();
}

/** The reply's quotation at the end of a plain-text mail: the `>` lines that close it and the
 * "On …, … wrote:" line before them (Zulip asks the talon library, which knows more forms). */
function withoutQuotation(text: string): string {
  const lines = text.split('\n');
  let end = lines.length;
  let quoted = false;
  while (end > 0 && (lines[end - 1]!.trim() === '' || lines[end - 1]!.startsWith('>'))) {
    if (lines[end - 1]!.startsWith('>')) quoted = true;
    end--;
  }
  if (!quoted) return text;
  if (end > 0 && /wrote:\s*$/i.test(lines[end - 1]!)) end--;
  return lines.slice(0, end).join('\n');
}

/** Zulip's convert_html_to_markdown: an image becomes a link named by its file, which
 * Parley's Markdown previews (it has no image syntax). Without quotations, the blockquotes of
 * a reply go, with Gmail's attribution. */
function htmlToMarkdown(html: string, includeQuotes: boolean): string {
  const turndown = new TurndownService({ codeBlockStyle: 'fenced', headingStyle: 'atx' });
  turndown.addRule('image-as-link', {
    filter: 'img',
    replacement: (_content, node) => {
      const src = (node as MarkupElement).getAttribute('src') ?? '';
      if (src === '') return '';
      const name = src.split('?')[0]!.split('/').pop() || src;
      return `[${escapeLinkText(name)}](${src})`;
    },
  });
  // A rule rather than turndown's remove(), which yields to its own blockquote rule.
  if (!includeQuotes)
    turndown.addRule('without-quotation', {
      filter: (node) => {
        const element = node as MarkupElement;
        return element.nodeName === 'BLOCKQUOTE' || hasClass(element, 'gmail_quote');
      },
      replacement: () => '',
    });
  turndown.remove(['style', 'script', 'head', 'title']);
  return turndown.turndown(html).trim();
}

/** What these rules read of turndown's DOM nodes (the project compiles without the DOM's
 * types). */
interface MarkupElement {
  nodeName: string;
  getAttribute(name: string): string | null;
}

function hasClass(element: MarkupElement, name: string): boolean {
  const classes = element.getAttribute('class') ?? '';
  return classes.split(/\s+/).includes(name);
}

/** A file name as plain text in Markdown. */
function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+!<>|~-]/g, (char) => `\\${char}`);
}

/** Zulip's get_markdown_link_for_url escapes the brackets of a link's text. */
function escapeLinkText(text: string): string {
  return text.replace(/[[\]]/g, (bracket) => `\\${bracket}`);
}

/** Zulip's extract_body: the plain-text part, or the HTML one made Markdown (prefer-html
 * swaps them). */
function extractBody(mail: PostalMime.Email, options: AddressOptions): string {
  const includeQuotes = options.include_quotes ?? false;
  const plain =
    mail.text === undefined ? undefined : includeQuotes ? mail.text : withoutQuotation(mail.text);
  const html = mail.html === undefined ? undefined : markdownOf(mail.html, includeQuotes);
  if (plain === undefined && html === undefined)
    throw new EmailForwardError('Unable to find plaintext or HTML message body', EX_DATAERR);
  // As Python tests strings: only an empty one is nothing (a blank one posts "(No email body)").
  if (!plain && !html)
    throw new EmailForwardError('Email has no nonempty body sections; ignoring.', EX_DATAERR);
  return (options.prefer_text ?? true) ? plain || html! : html || plain!;
}

/** An HTML body too deep for the converter is refused as malformed, not a crash. */
function markdownOf(html: string, includeQuotes: boolean): string {
  try {
    return htmlToMarkdown(html, includeQuotes);
  } catch (error) {
    throw new EmailForwardError(`Unreadable HTML body: ${(error as Error).message}`, EX_DATAERR);
  }
}

/** The mail's named parts, uploaded as the sender's files: one link each. */
async function uploadAttachments(
  mail: PostalMime.Email,
  realm: Realm,
  sender: User,
): Promise<string> {
  const links: string[] = [];
  for (const part of mail.attachments) {
    if (!part.filename) continue;
    const buffer =
      typeof part.content === 'string'
        ? Buffer.from(part.content, part.encoding === 'base64' ? 'base64' : 'utf8')
        : Buffer.from(part.content as ArrayBuffer);
    try {
      const attachment = await doUploadFile(sender, realm, {
        originalname: part.filename,
        mimetype: part.mimeType,
        buffer,
        size: buffer.length,
      });
      links.push(`[${escapeLinkText(attachment.fileName)}](/user_uploads/${attachment.pathId})`);
    } catch (error) {
      // The organization's file size limit or quota: the mail is posted without this file,
      // saying why, rather than returned whole.
      if (!(error instanceof JsonableError)) throw error;
      links.push(`${escapeMarkdown(part.filename)} (not uploaded: ${error.message})`);
    }
  }
  return links.join('\n');
}

/** Zulip's construct_zulip_body. */
async function constructBody(
  mail: PostalMime.Email,
  subject: string,
  realm: Realm,
  sender: User,
  options: AddressOptions & { subject_in_body?: boolean },
): Promise<string> {
  let body = extractBody(mail, options).replaceAll('\0', '');
  if (!options.include_footer) body = filterFooter(body);
  if (!body.endsWith('\n')) body += '\n';
  if (body.trimEnd() === '') body = '(No email body)';
  let preamble = '';
  if (options.show_sender) preamble = `**From:** ${fromHeader(mail)}\n`;
  if (options.subject_in_body) preamble += `**Subject:** ${subject}\n`;
  if (preamble !== '') preamble += '\n';
  let postamble = await uploadAttachments(mail, realm, sender);
  if (postamble !== '') postamble = `\n${postamble}`;
  // Cut the text, not the links: every attachment stays reachable.
  body = truncateText(
    body,
    MAX_MESSAGE_LENGTH - preamble.length - postamble.length,
    '\n[message truncated]',
  );
  return preamble + body + postamble;
}

function fromHeader(mail: PostalMime.Email): string {
  const from = mail.from;
  if (!from) return '';
  if (from.address === undefined) return from.name;
  return from.name ? `${from.name} <${from.address}>` : from.address;
}

/** What a mail delivered to the gateway became. */
export interface PostedEmail {
  messageId: number;
  /** The channel and topic it was posted to; null for a direct message. */
  channelId: number | null;
  topic: string | null;
}

/** Zulip's process_message: a mail delivered to `recipient`, which is a missed-message
 * email's reply address or a channel's address. */
export async function doReceiveEmail(
  recipient: string,
  raw: Uint8Array | string,
): Promise<PostedEmail> {
  const token = missedMessageToken(recipient);
  return token === null
    ? doReceiveChannelEmail(recipient, raw)
    : doReceiveMissedMessageReply(token, raw);
}

async function parseMail(raw: Uint8Array | string): Promise<PostalMime.Email> {
  try {
    return await PostalMime.parse(raw);
  } catch (error) {
    throw new EmailForwardError(`Unreadable mail: ${(error as Error).message}`, EX_DATAERR);
  }
}

/** Zulip's process_missed_message: a reply to a missed-message email, posted as the user it
 * was for to the conversation of the message it named: the channel's topic, the 1:1
 * conversation with its sender, or the group conversation. The mail's subject is not read;
 * quotations and a signature are left out. The user's own send checks apply, and a refusal
 * returns the mail (Zulip tells the user through the Notification Bot instead). */
async function doReceiveMissedMessageReply(
  token: string,
  raw: Uint8Array | string,
): Promise<PostedEmail> {
  const prisma = getPrisma();
  const address = await prisma.missedMessageEmailAddress.findUnique({
    where: { emailToken: token },
    include: { user: { include: { realm: true } }, message: { include: { recipient: true } } },
  });
  if (!address) throw new EmailForwardError('Zulip notification reply address is invalid.');
  const { user, message } = address;
  const realm = user.realm;
  if (realm.deactivated) throw new EmailForwardError('The organization is deactivated.', EX_NOPERM);
  await rateLimitEmailMirror(realm.id);
  if (!user.isActive)
    throw new EmailForwardError('The user this address replies for is deactivated.', EX_NOPERM);
  await prisma.missedMessageEmailAddress.update({
    where: { id: address.id },
    data: { timesUsed: { increment: 1 } },
  });
  const { recipient } = message;
  // Before the attachments are uploaded as the user: a refused reply leaves none behind.
  if (recipient.type === RecipientType.STREAM)
    await checkCanPost(
      user,
      await prisma.stream.findUniqueOrThrow({ where: { id: recipient.typeId } }),
    );
  const mail = await parseMail(raw);
  const content = checkContent(await constructBody(mail, '', realm, user, {}));
  let target: Parameters<typeof prepareMessage>[2];
  if (recipient.type === RecipientType.STREAM)
    target = { kind: 'channel', to: JSON.stringify(recipient.typeId), topic: message.subject };
  else if (recipient.type === RecipientType.PERSONAL)
    target = { kind: 'direct', to: JSON.stringify([message.senderId]) };
  else {
    const members = await groupConversationMembers(recipient.id);
    target = { kind: 'direct', to: JSON.stringify(members.map((member) => member.id)) };
  }
  const prepared = await prepareMessage(realm, user, target, content, {
    client: 'Internal',
    readBySender: true,
  });
  const sent = (await sendPreparedMessage(prepared)).message;
  getLogger().info('missed-message email reply posted', {
    realmId: realm.id,
    userId: user.id,
    messageId: sent.id,
  });
  return recipient.type === RecipientType.STREAM
    ? { messageId: sent.id, channelId: recipient.typeId, topic: message.subject }
    : { messageId: sent.id, channelId: null, topic: null };
}

/** Zulip's process_stream_message: the mail `raw`, delivered to `recipient`, posted to the
 * address's channel by its sender. Refusals (an unknown address, a sender who may no longer
 * post there, a mail without a body) throw EmailForwardError or the send's JsonableError. */
export async function doReceiveChannelEmail(
  recipient: string,
  raw: Uint8Array | string,
): Promise<PostedEmail> {
  const { row, options } = await channelEmailAddressOf(recipient);
  const prisma = getPrisma();
  const [realm, channel, sender, creator] = await Promise.all([
    prisma.realm.findUniqueOrThrow({ where: { id: row.realmId } }),
    prisma.stream.findUniqueOrThrow({ where: { id: row.channelId } }),
    prisma.user.findUniqueOrThrow({ where: { id: row.senderId } }),
    row.creatorId === null ? null : prisma.user.findUnique({ where: { id: row.creatorId } }),
  ]);
  if (realm.deactivated) throw new EmailForwardError('The organization is deactivated.', EX_NOPERM);
  // Zulip's rate_limit_mirror_by_realm: addresses are where automated systems send mail.
  await rateLimitEmailMirror(realm.id);
  // Zulip's check_access_for_channel_email_address: the gateway's mail is checked as the
  // person who asked for the address; other senders' as themselves.
  const gateway = await ensureSystemBot(realm, 'emailGateway');
  const accountable = sender.id === gateway.id && creator ? creator : sender;
  if (!accountable.isActive || !sender.isActive)
    throw new EmailForwardError(
      `The address of channel ${channel.id} belongs to a deactivated user.`,
      EX_NOPERM,
    );
  await checkCanPost(accountable, channel);

  const mail = await parseMail(raw);
  const subjectHeader = mail.subject ?? '';
  const mailOptions: AddressOptions & { subject_in_body?: boolean } = {
    ...options,
    include_quotes: options.include_quotes ?? isForwarded(subjectHeader),
  };
  // A subject's unprintable characters are dropped rather than the mail refused.
  const subject = [...stripFromSubject(subjectHeader)]
    .filter((char) => unprintablePosition(char) === null)
    .join('');
  let topic: string;
  if (channel.topicsPolicy === 'empty_topic_only') {
    mailOptions.subject_in_body = true;
    topic = '';
  } else topic = subject === '' ? 'Email with no subject' : subject;
  topic = checkTopic(topic);
  const content = checkContent(await constructBody(mail, subject, realm, sender, mailOptions));
  const prepared = await prepareMessage(
    realm,
    sender,
    { kind: 'channel', to: JSON.stringify(channel.id), topic },
    content,
    // The gateway bot posts for the address's creator, checked above as Zulip checks it; a
    // person or a bot of theirs posts as they would.
    { client: 'Internal', readBySender: true, bySystemBot: sender.id === gateway.id },
  );
  const { message } = await sendPreparedMessage(prepared);
  getLogger().info('email posted to a channel', {
    realmId: realm.id,
    channelId: channel.id,
    messageId: message.id,
  });
  return { messageId: message.id, channelId: channel.id, topic };
}
