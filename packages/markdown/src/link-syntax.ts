// What the server writes into its own messages to name a user, a topic or a message, and the
// web app's addresses of them (Zulip's silent_mention_syntax_for_user,
// zerver/lib/topic_link_util.py and zerver/lib/url_encoding.py). The Notification Bot's notices
// and reminders are written with these, and the channel links of any message point where
// `encodeChannel` says.

/** Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME: how a link's text names the empty topic. */
const EMPTY_TOPIC_FALLBACK_NAME = 'general chat';

/** Zulip's encode_hash_component: percent-encoding as Python's quote(safe="*") does (which,
 * unlike encodeURIComponent, also encodes ! ' ( and )), with "." for "%" so that the web app's
 * hash survives being decoded once by the browser. */
export function encodeHashComponent(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/\./g, '%2E')
    .replace(/%/g, '.');
}

/** Zulip's encode_channel: a channel's slug in a narrow, such as 9-Dev-team. */
export function encodeChannel(channelId: number, channelName: string): string {
  return `${channelId}-${encodeHashComponent(channelName.replace(/ /g, '-'))}`;
}

/** A mention that does not notify (Zulip's silent_mention_syntax_for_user). */
export function silentMentionSyntax(user: { id: number; fullName: string }): string {
  return `@_**${user.fullName}|${user.id}**`;
}

/** Characters that would end or break the #**channel>topic** syntax early. */
const LINK_BREAKERS = /[`>*&[\]]|\$\$/g;
const ESCAPED: Record<string, string> = {
  '`': '&#96;',
  '>': '&gt;',
  '*': '&#42;',
  '&': '&amp;',
  $$: '&#36;&#36;',
  '[': '&#91;',
  ']': '&#93;',
};

const breaksLinkSyntax = (text: string) => new RegExp(LINK_BREAKERS.source).test(text);
const escapeLinkText = (text: string) => text.replace(LINK_BREAKERS, (c) => ESCAPED[c] ?? c);

/** A plain Markdown link, for names the Zulip syntax cannot hold (get_fallback_markdown_link). */
function fallbackLink(
  channelId: number,
  channelName: string,
  topic?: string,
  messageId?: number,
): string {
  let link = `#narrow/channel/${encodeChannel(channelId, channelName)}`;
  let text = `#${escapeLinkText(channelName)}`;
  if (topic !== undefined) {
    link += `/topic/${encodeHashComponent(topic)}`;
    text += ` > ${escapeLinkText(topic === '' ? EMPTY_TOPIC_FALLBACK_NAME : topic)}`;
  }
  if (messageId !== undefined) {
    link += `/near/${messageId}`;
    text += ' @ 💬';
  }
  return `[${text}](${link})`;
}

/** #**channel**, or a plain link where the name would break it (get_stream_link_syntax). */
export function channelLinkSyntax(channelId: number, channelName: string): string {
  if (breaksLinkSyntax(channelName)) return fallbackLink(channelId, channelName);
  return `#**${channelName}**`;
}

/** #**channel>topic**, or a plain link where the names would break it
 * (get_stream_topic_link_syntax). */
export function topicLinkSyntax(channelId: number, channelName: string, topic: string): string {
  if (breaksLinkSyntax(topic) || breaksLinkSyntax(channelName))
    return fallbackLink(channelId, channelName, topic);
  return `#**${channelName}>${topic}**`;
}

/** #**channel>topic@message id**, or a plain link (get_message_link_syntax). */
export function messageLinkSyntax(
  channelId: number,
  channelName: string,
  topic: string,
  messageId: number,
): string {
  if (breaksLinkSyntax(topic) || breaksLinkSyntax(channelName))
    return fallbackLink(channelId, channelName, topic, messageId);
  return `#**${channelName}>${topic}@${messageId}**`;
}

/** The web app's address of a channel message (stream_message_url): `realmUrl` is the
 * organization's URL, without a trailing slash. */
export function channelMessageUrl(
  realmUrl: string,
  message: { id: number; channelId: number; channelName: string; topic: string },
): string {
  return `${topicNarrowUrl(realmUrl, message)}/near/${message.id}`;
}

/** The web app's address of a topic (Zulip's topic_narrow_url). */
export function topicNarrowUrl(
  realmUrl: string,
  topic: { channelId: number; channelName: string; topic: string },
): string {
  return `${realmUrl}/#narrow/channel/${encodeChannel(topic.channelId, topic.channelName)}/topic/${encodeHashComponent(topic.topic)}`;
}
