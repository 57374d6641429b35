// Mobile push notifications, the pure parts (Zulip's zerver/lib/notification_data.py and
// zerver/lib/push_notifications.py): who is notified of a message and why (the trigger, for
// pushes and for missed-message emails alike), the text a notification shows, and the APNs
// and FCM payloads. No I/O: the send path and the
// `push-notifications` job (actions/push-notifications.ts) feed them.
import type { UserMessageFlag } from '@parley/db';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import { VisibilityPolicy } from './user-topics';

/** Zulip's NotificationTriggers values for mobile pushes. */
export const PushTrigger = {
  DIRECT_MESSAGE: 'direct_message',
  MENTION: 'mentioned',
  TOPIC_WILDCARD_MENTION: 'topic_wildcard_mentioned',
  STREAM_WILDCARD_MENTION: 'stream_wildcard_mentioned',
  STREAM_PUSH: 'stream_push_notify',
  FOLLOWED_TOPIC_PUSH: 'followed_topic_push_notify',
  TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC: 'topic_wildcard_mentioned_in_followed_topic',
  STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC: 'stream_wildcard_mentioned_in_followed_topic',
} as const;
export type PushTriggerValue = (typeof PushTrigger)[keyof typeof PushTrigger];

const WILDCARD_TRIGGERS: ReadonlySet<string> = new Set([
  PushTrigger.TOPIC_WILDCARD_MENTION,
  PushTrigger.STREAM_WILDCARD_MENTION,
  PushTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC,
  PushTrigger.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC,
]);

/** A recipient's push settings, read by the send path only for recipients with a registered
 * device (the subscription's and topic's columns are null for direct messages). */
export interface PushSettings {
  /** enable_offline_push_notifications: direct messages and mentions. */
  offline: boolean;
  /** The subscription's push_notifications, else enable_stream_push_notifications. */
  channelPush: boolean | null;
  /** The subscription's wildcard_mentions_notify, else the user's. */
  wildcardNotify: boolean | null;
  channelMuted: boolean | null;
  /** The user's visibility policy for the topic (0 when none). */
  topicPolicy: number | null;
  /** enable_followed_topic_push_notifications. */
  followedPush: boolean;
  /** enable_followed_topic_wildcard_mentions_notify. */
  followedWildcard: boolean;
}

/** Why `flags`' owner gets a mobile notification, or null: Zulip's
 * UserMessageNotificationsData.from_user_id_sets and get_push_notification_trigger, in that
 * order of precedence. The caller leaves out the sender, bots, those who muted the sender
 * and those without a device. */
export function pushTrigger(
  flags: readonly UserMessageFlag[],
  settings: PushSettings,
  isChannel: boolean,
): PushTriggerValue | null {
  const trigger = messageTrigger(
    flags,
    { ...settings, channel: settings.channelPush, followed: settings.followedPush },
    isChannel,
  );
  if (trigger === 'channel') return PushTrigger.STREAM_PUSH;
  if (trigger === 'followed') return PushTrigger.FOLLOWED_TOPIC_PUSH;
  return trigger;
}

/** Zulip's NotificationTriggers values for missed-message emails: the push ones, with the
 * channel's and the followed topic's own. */
export const EmailTrigger = {
  DIRECT_MESSAGE: PushTrigger.DIRECT_MESSAGE,
  MENTION: PushTrigger.MENTION,
  TOPIC_WILDCARD_MENTION: PushTrigger.TOPIC_WILDCARD_MENTION,
  STREAM_WILDCARD_MENTION: PushTrigger.STREAM_WILDCARD_MENTION,
  TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC: PushTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC,
  STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC: PushTrigger.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC,
  STREAM_EMAIL: 'stream_email_notify',
  FOLLOWED_TOPIC_EMAIL: 'followed_topic_email_notify',
} as const;
export type EmailTriggerValue = (typeof EmailTrigger)[keyof typeof EmailTrigger];

/** A recipient's email settings: as PushSettings, with enable_offline_email_notifications
 * (`offline`), the subscription's email_notifications else enable_stream_email_notifications
 * (`channel`) and enable_followed_topic_email_notifications (`followed`). */
export type EmailSettings = Omit<PushSettings, 'channelPush' | 'followedPush'> & {
  channel: boolean | null;
  followed: boolean;
};

/** Why `flags`' owner gets a missed-message email if idle, or null: Zulip's
 * get_email_notification_trigger, the same precedence as pushes. */
export function emailTrigger(
  flags: readonly UserMessageFlag[],
  settings: EmailSettings,
  isChannel: boolean,
): EmailTriggerValue | null {
  const trigger = messageTrigger(flags, settings, isChannel);
  if (trigger === 'channel') return EmailTrigger.STREAM_EMAIL;
  if (trigger === 'followed') return EmailTrigger.FOLLOWED_TOPIC_EMAIL;
  return trigger;
}

/** The rules both kinds of notification share; `channel` and `followed` stand for the
 * kind's own channel and followed-topic triggers. */
function messageTrigger(
  flags: readonly UserMessageFlag[],
  settings: EmailSettings,
  isChannel: boolean,
):
  | Exclude<PushTriggerValue, 'stream_push_notify' | 'followed_topic_push_notify'>
  | 'channel'
  | 'followed'
  | null {
  const has = (flag: UserMessageFlag) => flags.includes(flag);
  const { offline } = settings;
  if (!isChannel) return offline ? PushTrigger.DIRECT_MESSAGE : null;
  if (offline && has('mentioned')) return PushTrigger.MENTION;
  const policy = settings.topicPolicy ?? VisibilityPolicy.INHERIT;
  const followed = policy === VisibilityPolicy.FOLLOWED;
  // Zulip's user_allows_notifications_in_StreamTopic: a muted channel is silent unless the
  // topic is unmuted or followed, a muted topic always.
  const audible =
    policy !== VisibilityPolicy.MUTED &&
    (!settings.channelMuted ||
      policy === VisibilityPolicy.UNMUTED ||
      policy === VisibilityPolicy.FOLLOWED);
  const followedWildcard = followed && settings.followedWildcard;
  const wildcard = audible && settings.wildcardNotify === true;
  if (offline && has('topic_wildcard_mentioned')) {
    if (followedWildcard) return PushTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC;
  }
  if (offline && has('stream_wildcard_mentioned')) {
    if (followedWildcard) return PushTrigger.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC;
  }
  if (offline && has('topic_wildcard_mentioned') && wildcard)
    return PushTrigger.TOPIC_WILDCARD_MENTION;
  if (offline && has('stream_wildcard_mentioned') && wildcard)
    return PushTrigger.STREAM_WILDCARD_MENTION;
  if (followed && settings.followed) return 'followed';
  if (audible && settings.channel === true) return 'channel';
  return null;
}

// ---------------------------------------------------------------------------------------
// The notification's text: Zulip's get_mobile_push_content, from the rendered HTML.

interface HtmlElement {
  tag: string;
  attrs: Record<string, string>;
  children: HtmlNode[];
}
type HtmlNode = HtmlElement | string;

const VOID_TAGS = new Set(['br', 'hr', 'img', 'input', 'meta', 'link', 'source', 'wbr']);

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
};

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code =
        name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : +name.slice(1);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** A tree of the rendered HTML (the Markdown renderer's own, well-formed output). */
function parseHtml(html: string): HtmlElement {
  const root: HtmlElement = { tag: '#root', attrs: {}, children: [] };
  const stack: HtmlElement[] = [root];
  const token =
    /<!--[\s\S]*?-->|<\/([a-zA-Z][\w-]*)\s*>|<([a-zA-Z][\w-]*)((?:\s+[^\s=>/]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?)*)\s*(\/?)>/g;
  let last = 0;
  const top = () => stack[stack.length - 1]!;
  for (const match of html.matchAll(token)) {
    if (match.index > last) top().children.push(decodeEntities(html.slice(last, match.index)));
    last = match.index + match[0].length;
    const [, closing, opening, attrText, selfClosing] = match;
    if (closing) {
      const name = closing.toLowerCase();
      const at = stack.map((e) => e.tag).lastIndexOf(name);
      if (at > 0) stack.length = at;
    } else if (opening) {
      const attrs: Record<string, string> = {};
      for (const attr of (attrText ?? '').matchAll(
        /([^\s=>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g,
      ))
        attrs[attr[1]!.toLowerCase()] = decodeEntities(attr[2] ?? attr[3] ?? attr[4] ?? '');
      const element: HtmlElement = { tag: opening.toLowerCase(), attrs, children: [] };
      top().children.push(element);
      if (!selfClosing && !VOID_TAGS.has(element.tag)) stack.push(element);
    }
  }
  if (last < html.length) top().children.push(decodeEntities(html.slice(last)));
  return root;
}

const classesOf = (element: HtmlElement) => (element.attrs.class ?? '').split(/\s+/);

/** The element's own text before its first child element (lxml's `.text`). */
function leadingText(element: HtmlElement): string {
  let text = '';
  for (const child of element.children) {
    if (typeof child !== 'string') break;
    text += child;
  }
  return text;
}

function textContent(node: HtmlNode): string {
  return typeof node === 'string' ? node : node.children.map(textContent).join('');
}

/** KaTeX output becomes its LaTeX source (Zulip's change_katex_to_raw_latex). */
function katexToLatex(element: HtmlElement): void {
  element.children = element.children.map((child) => {
    if (typeof child === 'string') return child;
    if (classesOf(child).includes('katex')) {
      const annotation = findFirst(child, (e) => e.tag === 'annotation');
      const latex = annotation ? textContent(annotation) : textContent(child);
      return `$$${latex}$$`;
    }
    katexToLatex(child);
    return child;
  });
}

function findFirst(element: HtmlElement, test: (e: HtmlElement) => boolean): HtmlElement | null {
  for (const child of element.children) {
    if (typeof child === 'string') continue;
    if (test(child)) return child;
    const found = findFirst(child, test);
    if (found) return found;
  }
  return null;
}

/** Top-level quotes among other blocks collapse to "[…]" (Zulip's potentially_collapse_quotes;
 * its "X said:" paragraphs are not recognized here). */
function collapseQuotes(root: HtmlElement): void {
  const blocks = root.children.filter((c): c is HtmlElement => typeof c !== 'string');
  const quoted = blocks.map((b) => b.tag === 'blockquote');
  if (quoted.every(Boolean) || quoted.every((q) => !q)) return;
  const children: HtmlNode[] = [];
  let previousQuoted = false;
  for (const child of root.children) {
    if (typeof child !== 'string' && child.tag === 'blockquote') {
      if (!previousQuoted) children.push({ tag: 'p', attrs: {}, children: ['[…]'] });
      previousQuoted = true;
      continue;
    }
    if (typeof child !== 'string') previousQuoted = false;
    children.push(child);
  }
  root.children = children;
}

function elementText(element: HtmlElement): string {
  const classes = classesOf(element);
  if (classes.includes('emoji')) {
    const code = classes.map((c) => /^emoji-(\S+)$/.exec(c)?.[1]).find(Boolean);
    if (code && /^[0-9a-f]+(-[0-9a-f]+)*$/i.test(code))
      return String.fromCodePoint(...code.split('-').map((hex) => parseInt(hex, 16)));
  }
  if (element.tag === 'img') return element.attrs.alt ?? '';
  if (element.tag === 'blockquote') return '';
  return leadingText(element);
}

/** A numbered list; `olAncestors` lists enclosing it indent it (Zulip's render_olist). */
function renderOrderedList(list: HtmlElement, olAncestors: number): string {
  let counter = list.attrs.start ? Number.parseInt(list.attrs.start, 10) || 1 : 1;
  const indent = olAncestors > 0 ? '\n' + '  '.repeat(olAncestors) : '';
  const items: string[] = [];
  for (const item of list.children) {
    if (typeof item === 'string') continue;
    items.push(indent + `${counter}. ` + processElement(item, olAncestors + 1).trim());
    counter += 1;
  }
  return items.join('\n');
}

/** Zulip's process(): the element's own text, then its children's, each followed by its tail
 * (the text after it up to the next element). */
function processElement(element: HtmlElement, olAncestors: number): string {
  if (element.tag === 'ol') return renderOrderedList(element, olAncestors);
  if (classesOf(element).includes('spoiler-block')) {
    const header = findFirst(element, (e) => classesOf(e).includes('spoiler-header'));
    const text = header ? processElement(header, olAncestors).trim() : '';
    return text === '' ? '(…)\n' : `${text} (…)\n`;
  }
  let sub = '';
  // Text before the first child element is the element's own; Zulip drops the tails of
  // lists and spoilers.
  let keepTail = false;
  for (const child of element.children) {
    if (typeof child === 'string') {
      if (keepTail) sub += child;
      continue;
    }
    sub += processElement(child, olAncestors);
    keepTail = child.tag !== 'ol' && !classesOf(child).includes('spoiler-block');
  }
  if (element.tag === 'blockquote')
    sub = sub
      .split(/\r\n|\r|\n/)
      .filter((line) => line !== '')
      .map((line) => `> ${line}\n`)
      .join('');
  return elementText(element) + sub;
}

/** The plain text a notification shows (Zulip's get_mobile_push_content). */
export function mobilePushContent(renderedContent: string, redact = false): string {
  if (redact) return 'New message';
  const root = parseHtml(renderedContent);
  katexToLatex(root);
  collapseQuotes(root);
  return processElement(root, 0);
}

/** Zulip's truncate_content: 200 code points, then an ellipsis. */
export function truncateContent(content: string): [string, boolean] {
  const chars = [...content];
  if (chars.length <= 200) return [content, false];
  return [chars.slice(0, 200).join('') + '…', true];
}

// ---------------------------------------------------------------------------------------
// Payloads (Zulip's get_message_payload_apns and get_message_payload_gcm).

export interface PushRealm {
  id: number;
  name: string;
  url: string;
}

export interface PushMessage {
  id: number;
  dateSent: Date;
  renderedContent: string;
  /** Channel messages: the channel and the topic. */
  channel: { id: number; name: string; topic: string } | null;
  /** Direct messages to a group of three or more: every participant. */
  groupParticipants: { id: number; fullName: string }[] | null;
  sender: { id: number; fullName: string; email: string; avatarUrl: string };
}

export interface PushRecipient {
  id: number;
  realm: PushRealm;
  trigger: string;
  /** The group a mention reached the user through (null when mentioned personally). */
  mentionedGroup: { id: number; name: string } | null;
}

export interface PushOptions {
  /** The server's host (Zulip's EXTERNAL_HOST). */
  server: string;
  redactContent: boolean;
}

export type Payload = Record<string, unknown>;

/** Zulip's get_base_payload: what lets an app tell accounts and servers apart. */
export function basePayload(
  user: Pick<PushRecipient, 'id' | 'realm'>,
  options: PushOptions,
): Payload {
  return {
    server: options.server,
    realm_id: user.realm.id,
    realm_uri: user.realm.url,
    realm_url: user.realm.url,
    realm_name: user.realm.name,
    user_id: user.id,
  };
}

/** The empty topic as clients show it. */
export const topicDisplayName = (topic: string) =>
  topic === '' ? EMPTY_TOPIC_DISPLAY_NAME : topic;

/** Zulip's get_message_payload: the fields both platforms share. */
function messagePayload(message: PushMessage, user: PushRecipient, options: PushOptions): Payload {
  const data = basePayload(user, options);
  data.sender_id = message.sender.id;
  data.sender_email = message.sender.email;
  data.time = Math.floor(message.dateSent.getTime() / 1000);
  if (user.mentionedGroup) {
    data.mentioned_user_group_id = user.mentionedGroup.id;
    data.mentioned_user_group_name = user.mentionedGroup.name;
  }
  if (message.channel) {
    data.recipient_type = 'stream';
    data.stream = message.channel.name;
    data.stream_id = message.channel.id;
    data.topic = topicDisplayName(message.channel.topic);
  } else {
    data.recipient_type = 'private';
    if (message.groupParticipants)
      data.pm_users = message.groupParticipants
        .map((p) => p.id)
        .sort((a, b) => a - b)
        .join(',');
  }
  return data;
}

/** The first bolded line of an iOS notification. */
function apnsTitle(message: PushMessage): string {
  if (message.groupParticipants)
    return message.groupParticipants
      .map((p) => p.fullName)
      .sort()
      .join(', ');
  if (message.channel)
    return `#${message.channel.name} > ${topicDisplayName(message.channel.topic)}`;
  return message.sender.fullName;
}

/** The second bolded line of an iOS notification. */
function apnsSubtitle(message: PushMessage, user: PushRecipient): string {
  const name = message.sender.fullName;
  if (user.trigger === PushTrigger.MENTION)
    return user.mentionedGroup
      ? `${name} mentioned @${user.mentionedGroup.name}:`
      : `${name} mentioned you:`;
  if (WILDCARD_TRIGGERS.has(user.trigger)) return `${name} mentioned everyone:`;
  if (!message.channel && !message.groupParticipants) return '';
  return `${name}:`;
}

export function messagePayloadApns(
  message: PushMessage,
  user: PushRecipient,
  options: PushOptions,
): Payload {
  const zulip = { ...messagePayload(message, user, options), message_ids: [message.id] };
  const [content] = truncateContent(
    mobilePushContent(message.renderedContent, options.redactContent),
  );
  return {
    alert: { title: apnsTitle(message), subtitle: apnsSubtitle(message, user), body: content },
    sound: 'default',
    // Zulip sends 0 for now (get_apns_badge_count), pending a fix in the mobile app.
    badge: 0,
    custom: { zulip },
  };
}

export function messagePayloadGcm(
  message: PushMessage,
  user: PushRecipient,
  options: PushOptions,
): [Payload, Payload] {
  const [content, truncated] = truncateContent(
    mobilePushContent(message.renderedContent, options.redactContent),
  );
  return [
    {
      ...messagePayload(message, user, options),
      event: 'message',
      zulip_message_id: message.id,
      content,
      content_truncated: truncated,
      sender_full_name: message.sender.fullName,
      sender_avatar_url: message.sender.avatarUrl,
    },
    { priority: 'high' },
  ];
}

/** The ids of the user groups a message mentions (not silently), from its rendered HTML. */
export function mentionedGroupIds(renderedContent: string): number[] {
  const ids = new Set<number>();
  for (const match of renderedContent.matchAll(
    /<span class="user-group-mention" data-user-group-id="(\d+)"/g,
  ))
    ids.add(Number(match[1]));
  return [...ids];
}

/** Whether the message mentions the user personally (not silently). */
export function mentionsPersonally(renderedContent: string, userId: number): boolean {
  return renderedContent.includes(`<span class="user-mention" data-user-id="${userId}"`);
}

/** APNs limits a notification to 4 KB: a removal names at most this many messages, the
 * newest (Zulip's MAX_APNS_MESSAGE_IDS). */
const MAX_REMOVED_IDS = 200;

/** The messages a removal names (Zulip's handle_remove_push_notification). */
export function removedIds(messageIds: number[]): number[] {
  return [...messageIds].sort((a, b) => a - b).slice(-MAX_REMOVED_IDS);
}

/** Zulip's send_test_push_notification_directly_to_devices: the payloads of a test
 * notification, APNs then FCM with its options. */
export function testPayloads(
  user: Pick<PushRecipient, 'id' | 'realm'>,
  options: PushOptions,
  now: Date,
): { apns: Payload; gcm: Payload; gcmOptions: Payload } {
  const base = basePayload(user, options);
  return {
    apns: {
      alert: {
        title: 'Test notification',
        body: `This is a test notification from ${user.realm.name} (${user.realm.url}).`,
      },
      sound: 'default',
      custom: { zulip: { ...base, event: 'test' } },
    },
    gcm: { ...base, event: 'test', time: Math.floor(now.getTime() / 1000) },
    gcmOptions: { priority: 'high' },
  };
}

/** Zulip's get_remove_payload_apns: the app removes these messages' notifications. */
export function removePayloadApns(
  user: Pick<PushRecipient, 'id' | 'realm'>,
  messageIds: number[],
  options: PushOptions,
): Payload {
  return {
    badge: 0,
    custom: {
      zulip: {
        ...basePayload(user, options),
        event: 'remove',
        zulip_message_ids: messageIds.join(','),
      },
    },
  };
}

/** Zulip's get_remove_payload_gcm. */
export function removePayloadGcm(
  user: Pick<PushRecipient, 'id' | 'realm'>,
  messageIds: number[],
  options: PushOptions,
): [Payload, Payload] {
  return [
    {
      ...basePayload(user, options),
      event: 'remove',
      zulip_message_ids: messageIds.join(','),
      // Apps older than 2019 read only this one.
      zulip_message_id: messageIds[0],
    },
    { priority: 'normal' },
  ];
}

// ---------------------------------------------------------------------------------------
// End-to-end encrypted payloads (Zulip's E2EE push, feature level 468): one JSON object the
// app decrypts, the same for iOS and Android, in Zulip's key order. Only the app reads them,
// so they carry no legacy fields (server, realm_id, sender_email, stringified numbers).

/** What identifies the account a notification is for. */
function e2eeBasePayload(user: Pick<PushRecipient, 'id' | 'realm'>): Payload {
  return { realm_url: user.realm.url, realm_name: user.realm.name, user_id: user.id };
}

export function messagePayloadE2ee(
  message: PushMessage,
  user: PushRecipient,
  options: PushOptions,
): Payload {
  const data = e2eeBasePayload(user);
  data.sender_id = message.sender.id;
  if (user.mentionedGroup) {
    data.mentioned_user_group_id = user.mentionedGroup.id;
    data.mentioned_user_group_name = user.mentionedGroup.name;
  }
  if (message.channel) {
    data.recipient_type = 'channel';
    data.channel_name = message.channel.name;
    data.channel_id = message.channel.id;
    data.topic = topicDisplayName(message.channel.topic);
  } else {
    data.recipient_type = 'direct';
    // Every participant, the sender and the user included (a 1:1: the two of them).
    const ids = message.groupParticipants?.map((p) => p.id) ?? [message.sender.id, user.id];
    data.recipient_user_ids = [...new Set(ids)].sort((a, b) => a - b);
  }
  // The operator's redaction still holds: it is a promise about what leaves the server.
  const [content] = truncateContent(
    mobilePushContent(message.renderedContent, options.redactContent),
  );
  return {
    ...data,
    type: 'message',
    message_id: message.id,
    time: Math.floor(message.dateSent.getTime() / 1000),
    content,
    sender_full_name: message.sender.fullName,
    sender_avatar_url: message.sender.avatarUrl,
  };
}

export function removePayloadE2ee(
  user: Pick<PushRecipient, 'id' | 'realm'>,
  messageIds: number[],
): Payload {
  return { ...e2eeBasePayload(user), type: 'remove', message_ids: messageIds };
}

export function testPayloadE2ee(user: Pick<PushRecipient, 'id' | 'realm'>, now: Date): Payload {
  return { ...e2eeBasePayload(user), type: 'test', time: Math.floor(now.getTime() / 1000) };
}
