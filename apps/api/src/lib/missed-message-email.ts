// The missed-message email of one conversation (Zulip's do_send_missedmessage_events_reply_
// in_zulip and its missed_message templates): subject, plain text and HTML. No I/O: the
// `missed-message-email` job (actions/email-notifications.ts) gathers the messages.
import TurndownService from 'turndown';
import { escapeHtml } from '../presenters/realm';
import { EmailTrigger, topicDisplayName } from './push-notifications';

export type MissedConversation =
  | { kind: 'channel'; channelName: string; topic: string }
  | { kind: 'direct'; senderName: string }
  | { kind: 'group'; otherNames: string[] };

export interface MissedMessage {
  senderName: string;
  /** The rendered HTML, as stored. */
  html: string;
  trigger: string | null;
  /** For a mention that reached the user through a group only. */
  mentionedGroupName: string | null;
}

export interface MissedEmailInput {
  conversation: MissedConversation;
  /** Oldest first. */
  messages: MissedMessage[];
  /** Where the conversation opens in the web app. */
  narrowUrl: string;
  realm: { name: string; url: string };
  /** Zulip's message_content_allowed_in_missedmessage_emails (the user's setting). */
  showContent: boolean;
  /** Zulip's include_realm_name_in_missedmessage_emails_subject. */
  includeRealmName: boolean;
}

export interface MissedEmail {
  subject: string;
  text: string;
  html: string;
}

/** A group conversation's other participants as Zulip names them in the subject. */
export function groupDisplayName(names: string[]): string {
  if (names.length <= 2) return names.join(' and ');
  if (names.length === 3) return `${names[0]}, ${names[1]}, and ${names[2]}`;
  return `${names.slice(0, 2).join(', ')}, and ${names.length - 2} others`;
}

function subjectOf(input: MissedEmailInput): string {
  const { conversation } = input;
  let subject: string;
  if (!input.showContent) subject = 'New messages';
  else if (conversation.kind === 'group')
    subject = `Group DMs with ${groupDisplayName(conversation.otherNames)}`;
  else if (conversation.kind === 'direct')
    subject = `DMs with ${[...new Set(input.messages.map((m) => m.senderName))].join(', ')}`;
  else subject = `#${conversation.channelName} > ${topicDisplayName(conversation.topic)}`;
  return input.includeRealmName ? `${subject} [${input.realm.name}]` : subject;
}

/** Why the user gets the email (the templates' closing sentence); none for direct messages. */
function reasonOf(input: MissedEmailInput): string | null {
  const { conversation, messages } = input;
  if (conversation.kind !== 'channel') return null;
  const triggers = new Set(messages.map((m) => m.trigger));
  const channel = `#${conversation.channelName}`;
  if (triggers.has(EmailTrigger.MENTION)) {
    const group = messages.find(
      (m) => m.trigger === EmailTrigger.MENTION && m.mentionedGroupName !== null,
    )?.mentionedGroupName;
    const personal = messages.some(
      (m) => m.trigger === EmailTrigger.MENTION && m.mentionedGroupName === null,
    );
    return personal || !group
      ? 'You are receiving this because you were personally mentioned.'
      : `You are receiving this because @${group} was mentioned.`;
  }
  if (
    triggers.has(EmailTrigger.TOPIC_WILDCARD_MENTION) ||
    triggers.has(EmailTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC)
  )
    return 'You are receiving this because all topic participants were mentioned.';
  if (
    triggers.has(EmailTrigger.STREAM_WILDCARD_MENTION) ||
    triggers.has(EmailTrigger.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC)
  )
    return `You are receiving this because everyone was mentioned in ${channel}.`;
  if (triggers.has(EmailTrigger.FOLLOWED_TOPIC_EMAIL))
    return 'You are receiving this because you have email notifications enabled for topics you follow.';
  if (triggers.has(EmailTrigger.STREAM_EMAIL))
    return `You are receiving this because you have email notifications enabled for ${channel}.`;
  return null;
}

/** Links and images of the rendered HTML point into the organization: relative in the web
 * app, they must be absolute in a mail (Zulip's relative_to_full_url). */
function absoluteUrls(html: string, realmUrl: string): string {
  return html.replace(/\b(href|src)="(\/|#)/g, (_whole, attr: string, start: string) =>
    start === '/' ? `${attr}="${realmUrl}/` : `${attr}="${realmUrl}/#`,
  );
}

let turndown: TurndownService | undefined;
function htmlToText(html: string): string {
  turndown ??= new TurndownService({ codeBlockStyle: 'fenced', headingStyle: 'atx' });
  return turndown.turndown(html);
}

/** Zulip's header of a conversation in the mail: `#channel > topic`, or who it is with. */
function headerOf(conversation: MissedConversation): string {
  if (conversation.kind === 'channel')
    return `#${conversation.channelName} > ${topicDisplayName(conversation.topic)}`;
  if (conversation.kind === 'group') return `You and ${groupDisplayName(conversation.otherNames)}`;
  return `You and ${conversation.senderName}`;
}

/** Consecutive messages of one sender, as Zulip's build_message_list groups them. */
function bySender(messages: MissedMessage[]): { senderName: string; messages: MissedMessage[] }[] {
  const blocks: { senderName: string; messages: MissedMessage[] }[] = [];
  for (const message of messages) {
    const last = blocks[blocks.length - 1];
    if (last && last.senderName === message.senderName) last.messages.push(message);
    else blocks.push({ senderName: message.senderName, messages: [message] });
  }
  return blocks;
}

export function missedMessageEmail(input: MissedEmailInput): MissedEmail {
  const { realm, narrowUrl } = input;
  const settingsUrl = `${realm.url}/#settings/notifications`;
  const reason = reasonOf(input);
  const text: string[] = [];
  const html: string[] = [];
  if (input.showContent) {
    const header = headerOf(input.conversation);
    text.push(header, '');
    html.push(`<p><a href="${escapeHtml(narrowUrl)}"><b>${escapeHtml(header)}</b></a></p>`);
    for (const block of bySender(input.messages)) {
      text.push(`${block.senderName}:`);
      html.push(`<p><b>${escapeHtml(block.senderName)}</b></p>`);
      for (const message of block.messages) {
        const body = absoluteUrls(message.html, realm.url);
        text.push(htmlToText(body), '');
        html.push(`<div>${body}</div>`);
      }
    }
  } else {
    const why =
      'This email does not include message content because you have disabled message content in email notifications.';
    text.push(why, '');
    html.push(`<p>${escapeHtml(why)}</p>`);
  }
  const view = `View or reply in ${realm.name}: ${narrowUrl}`;
  const manage = `Manage email preferences: ${settingsUrl}`;
  text.push('--', view, ...(reason ? [reason] : []), manage);
  html.push(
    '<hr>',
    `<p><a href="${escapeHtml(narrowUrl)}">View or reply in ${escapeHtml(realm.name)}</a></p>`,
    ...(reason ? [`<p>${escapeHtml(reason)}</p>`] : []),
    `<p><a href="${escapeHtml(settingsUrl)}">Manage email preferences</a></p>`,
  );
  return { subject: subjectOf(input), text: `${text.join('\n')}\n`, html: html.join('\n') };
}
