// Reporting a message to the organization's moderators (POST /messages/{id}/report, Zulip's
// report_message_backend and send_message_report): the Notification Bot posts who reported
// what, why, and a quote of the message in the moderation request channel, in a topic named
// after its sender ("{name} moderation"), so moderators can act on it.
import { getPrisma, type Message, type Realm, type Stream, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { messageLinkSyntax, silentMentionSyntax } from '@parley/markdown';
import { accessMessage } from '../lib/messages';
import {
  MAX_REPORT_DESCRIPTION_LENGTH,
  REPORT_MESSAGE_TYPES,
  type ReportType,
} from '../lib/message-reports';
import { directMessageLink, globalTimeSyntax, unusedFence } from '../lib/quoting';
import { currentRealm } from '../lib/realm-state';
import { truncateText } from '../lib/text';
import { MAX_MESSAGE_LENGTH } from './messages';
import { sendBotMessage } from './system-bots';

/** Room for the quote: what is left of a message after the description and Zulip's 500
 * characters for the rest of the text. */
const MAX_REPORTED_SNIPPET_LENGTH = MAX_MESSAGE_LENGTH - MAX_REPORT_DESCRIPTION_LENGTH - 500;

const mentionOf = (user: { id: number; fullName: string }) => silentMentionSyntax(user);

/** "Ann, Bob, and Cy" in Zulip's order for a report's list of recipients. */
function recipientList(mentions: string[]): string {
  const sorted = [...mentions].sort();
  const last = sorted.pop()!;
  if (sorted.length === 0) return last;
  return `${sorted.join(', ')}${sorted.length > 1 ? ',' : ''} and ${last}`;
}

/** The report's text, as Zulip's send_message_report writes it. */
export async function messageReportContent(
  realm: Pick<Realm, 'stringId'>,
  reporter: Pick<User, 'id' | 'fullName'>,
  message: Message,
  sender: Pick<User, 'id' | 'fullName'>,
  stream: Pick<Stream, 'id' | 'name'> | null,
  reportType: ReportType,
  description: string,
): Promise<string> {
  const sent = globalTimeSyntax(message.dateSent);
  const who = `${mentionOf(reporter)} reported`;
  let header: string;
  let original: string;
  if (stream) {
    header = `${who} a message sent by ${mentionOf(sender)} at ${sent}.`;
    const link = messageLinkSyntax(stream.id, stream.name, message.subject, message.id);
    original = `Original message at ${link}`;
  } else {
    const { participants, url } = await directMessageLink(realm, message);
    original = `[Original message](${url})`;
    if (participants.length <= 2) {
      // Someone reporting their own message says to whom it went (themselves, if no one else).
      const other = participants.find((user) => user.id !== reporter.id) ?? reporter;
      header =
        sender.id !== reporter.id
          ? `${who} a direct message sent by ${mentionOf(sender)} at ${sent}.`
          : `${who} a direct message sent by ${mentionOf(sender)} to ${mentionOf(other)} at ${sent}.`;
    } else {
      const others = participants.filter((user) => user.id !== sender.id).map(mentionOf);
      header = `${who} a direct message sent by ${mentionOf(sender)} to ${recipientList(others)} at ${sent}.`;
    }
  }
  const reason = REPORT_MESSAGE_TYPES.find((type) => type.key === reportType)!.name;
  const quoted = truncateText(
    message.content,
    MAX_REPORTED_SNIPPET_LENGTH,
    '\n[message truncated]',
  );
  const fence = unusedFence(quoted);
  return (
    `${header}\n\`\`\`quote\n**${reason}**. ${description}\n\`\`\`\n\n` +
    `${fence} spoiler ${original}\n${quoted}\n${fence}`
  );
}

/** Zulip's report_message_backend, in its order: the description for "other", a moderation
 * channel, then access to the message (anyone who can read it may report it, their own too). */
export async function doReportMessage(
  realm: Realm,
  reporter: User,
  messageId: number,
  reportType: ReportType,
  description: string,
): Promise<void> {
  if (reportType === 'other' && description === '')
    throw new JsonableError('An explanation is required.');
  const { moderationRequestChannelId } = await currentRealm(realm);
  if (moderationRequestChannelId === null)
    throw new JsonableError('Message reporting is not enabled in this organization.');
  const { message, stream } = await accessMessage(reporter, messageId);
  const prisma = getPrisma();
  const [sender, channel] = await Promise.all([
    prisma.user.findUniqueOrThrow({ where: { id: message.senderId } }),
    prisma.stream.findUniqueOrThrow({ where: { id: moderationRequestChannelId } }),
  ]);
  const content = await messageReportContent(
    realm,
    reporter,
    message,
    sender,
    stream,
    reportType,
    description,
  );
  const topic = channel.topicsPolicy === 'empty_topic_only' ? '' : `${sender.fullName} moderation`;
  await sendBotMessage(
    realm,
    'notification',
    { kind: 'channel', to: JSON.stringify(channel.id), topic },
    content,
  );
}
