// The missed-message email of one conversation (Zulip's do_send_missedmessage_events_reply_
// in_zulip and its missed_message templates): subject, plain text and HTML. No I/O: the
// `missed-message-email` job (actions/email-notifications.ts) gathers the messages.
import { HTMLElement, parse } from 'node-html-parser';
import { escapeHtml } from '../presenters/realm';
import { holdsMarkdown, parseFenceLine, type FenceLine } from '@parley/markdown';
import { EmailTrigger, topicDisplayName } from './push-notifications';
import { RESOLVED_TOPIC_PREFIX } from './text';

export type MissedConversation =
  | { kind: 'channel'; channelName: string; topic: string }
  | { kind: 'direct'; senderName: string }
  | { kind: 'group'; otherNames: string[] };

export interface MissedMessage {
  senderName: string;
  /** The Markdown source (the plain-text part is made from it, as Zulip's). */
  content: string;
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
  /** The email has a reply address of the gateway (Zulip's reply_to_zulip). */
  replyByEmail: boolean;
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

/** Zulip's get_topic_resolution_and_bare_name. */
function bareTopic(topic: string): { resolved: boolean; name: string } {
  return topic.startsWith(RESOLVED_TOPIC_PREFIX)
    ? { resolved: true, name: topic.slice(RESOLVED_TOPIC_PREFIX.length) }
    : { resolved: false, name: topic };
}

/** Zulip's missed_message.subject.txt. A resolved topic keeps its subject behind a
 * bracketed prefix, which mail clients leave out when threading. */
function subjectOf(input: MissedEmailInput): string {
  const { conversation } = input;
  let subject: string;
  if (!input.showContent) subject = 'New messages';
  else if (conversation.kind === 'group')
    subject = `Group DMs with ${groupDisplayName(conversation.otherNames)}`;
  else if (conversation.kind === 'direct')
    subject = `DMs with ${[...new Set(input.messages.map((m) => m.senderName))].join(', ')}`;
  else {
    const topic = bareTopic(conversation.topic);
    subject = `${topic.resolved ? '[resolved] ' : ''}#${conversation.channelName} > ${topicDisplayName(topic.name)}`;
  }
  return input.includeRealmName ? `${subject} [${input.realm.name}]` : subject;
}

/** Why the user gets the email (missed_message.txt's closing sentence, in its order); none
 * for direct messages. */
function reasonOf(input: MissedEmailInput): string | null {
  const { conversation, messages } = input;
  if (conversation.kind !== 'channel') return null;
  const has = (trigger: string) => messages.some((m) => m.trigger === trigger);
  const channel = `#${conversation.channelName}`;
  const topic = `${channel} > ${topicDisplayName(bareTopic(conversation.topic).name)}`;
  const because = 'You are receiving this because';
  const mentions = messages.filter((m) => m.trigger === EmailTrigger.MENTION);
  if (mentions.some((m) => m.mentionedGroupName === null))
    return `${because} you were personally mentioned.`;
  const group = mentions.find((m) => m.mentionedGroupName !== null)?.mentionedGroupName;
  if (group) return `${because} @${group} was mentioned.`;
  if (has(EmailTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC))
    return `${because} all topic participants were mentioned in ${topic}.`;
  if (has(EmailTrigger.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC))
    return `${because} you have wildcard mention notifications enabled for topics you follow.`;
  if (has(EmailTrigger.TOPIC_WILDCARD_MENTION))
    return `${because} all topic participants were mentioned in ${topic}.`;
  if (has(EmailTrigger.STREAM_WILDCARD_MENTION))
    return `${because} everyone was mentioned in ${channel}.`;
  if (has(EmailTrigger.FOLLOWED_TOPIC_EMAIL))
    return `${because} you have email notifications enabled for topics you follow.`;
  if (has(EmailTrigger.STREAM_EMAIL))
    return `${because} you have email notifications enabled for ${channel}.`;
  return null;
}

const SPOILER_TITLE = 'Open Zulip to see the spoiler content';

/** The rendered HTML made fit for a mail (Zulip's relative_to_full_url, fix_emojis,
 * fix_spoilers_in_html and change_katex_to_raw_latex): links absolute, inline images (which
 * need a login to load) dropped, or made a link when the message is only an image; Unicode
 * emoji as their characters; a spoiler's content replaced by a note; math as its LaTeX. */
export function emailHtml(rendered: string, realmUrl: string): string {
  const root = parse(`<div>${rendered}</div>`).firstChild as HTMLElement;
  const blocks = root.childNodes.filter((node) => node instanceof HTMLElement);
  const only = blocks.length === 1 ? blocks[0]! : null;
  if (only?.classList.contains('message_inline_image')) {
    const link = only.querySelector('a');
    // Its address as the link's text too, absolute (Zulip's stays relative).
    const href = fullUrl(link?.getAttribute('href') ?? '', realmUrl);
    const title = link?.getAttribute('title');
    only.replaceWith(
      `<p><a href="${escapeHtml(href)}" target="_blank"${title === undefined ? '' : ` title="${escapeHtml(title)}"`}>${escapeHtml(href)}</a></p>`,
    );
  } else {
    for (const image of root.querySelectorAll('.message_inline_image')) image.remove();
  }
  for (const element of root.querySelectorAll('[href], [src]'))
    for (const attribute of ['href', 'src']) {
      const value = element.getAttribute(attribute);
      if (value === undefined) continue;
      const absolute = fullUrl(value, realmUrl);
      if (absolute === value) continue;
      element.setAttribute(attribute, absolute);
      // Only links written as narrow URLs have a title, which shows the address.
      if (/^\/?#narrow\//.test(value) && element.getAttribute('title') !== undefined)
        element.setAttribute('title', absolute);
    }
  for (const emoji of root.querySelectorAll('span.emoji')) {
    const code = /(?:^|\s)emoji-([0-9a-f-]+)(?:\s|$)/.exec(emoji.getAttribute('class') ?? '')?.[1];
    if (code)
      emoji.replaceWith(String.fromCodePoint(...code.split('-').map((hex) => parseInt(hex, 16))));
  }
  for (const image of root.querySelectorAll('img.emoji')) {
    image.removeAttribute('class');
    image.setAttribute('style', 'height: 20px;');
  }
  for (const spoiler of root.querySelectorAll('.spoiler-block')) {
    const header = spoiler.querySelector('.spoiler-header');
    spoiler.querySelector('.spoiler-content')?.remove();
    if (!header) continue;
    const note = `<span class="spoiler-title" title="${SPOILER_TITLE}">(${SPOILER_TITLE})</span>`;
    const paragraph = header.querySelector('p');
    if (paragraph) paragraph.insertAdjacentHTML('beforeend', ` ${note}`);
    else header.insertAdjacentHTML('beforeend', `<p>${note}</p>`);
    header.replaceWith(...header.childNodes);
  }
  for (const math of root.querySelectorAll('.katex')) {
    const latex = math.querySelector('annotation')?.text ?? math.text;
    math.replaceWith(escapeHtml(`$$${latex}$$`));
  }
  return root.innerHTML;
}

/** An address of the organization's, relative in the web app, made absolute. */
function fullUrl(value: string, realmUrl: string): string {
  if (/^\/?#narrow\//.test(value)) return value.replace(/^\/?#narrow\//, `${realmUrl}/#narrow/`);
  if (value.startsWith('/') && !value.startsWith('//')) return `${realmUrl}${value}`;
  if (value.startsWith('#')) return `${realmUrl}/${value}`;
  return value;
}

/** The plain-text part of a message (Zulip's build_message_payload): the Markdown source,
 * images' links as bare addresses, uploads' addresses absolute, a spoiler's content replaced
 * by a note, every line quoted. Fences are read as the renderer reads them (fences.ts): inside
 * a spoiler or a quote, fences nest. Unlike Zulip's fix_spoilers_in_text, fence lines outside
 * spoilers are kept. */
export function emailText(content: string, realmUrl: string): string {
  const plain = content
    .replace(/\[(\S*)\]\((\S*)\)/g, '$2')
    .replace(/(^|[\s(<])\/user_uploads\//g, `$1${realmUrl}/user_uploads/`);
  const output: string[] = [];
  const open: { fence: string; nests: boolean }[] = [];
  // The depth of the spoiler whose content is hidden, while in one.
  let hiddenAt = -1;
  for (const line of plain.split('\n')) {
    const innermost = open[open.length - 1];
    let opened: FenceLine | null = null;
    if (innermost && line.trimEnd() === innermost.fence) {
      open.pop();
      if (open.length === hiddenAt) hiddenAt = -1;
      else if (hiddenAt >= 0) continue;
      output.push(line);
      continue;
    }
    if (!innermost || innermost.nests) {
      opened = parseFenceLine(line);
      if (opened) open.push({ fence: opened.fence, nests: holdsMarkdown(opened.lang) });
    }
    if (hiddenAt >= 0) continue;
    output.push(line);
    if (opened?.lang?.toLowerCase() === 'spoiler') {
      hiddenAt = open.length - 1;
      output.push(`(${SPOILER_TITLE})`);
    }
  }
  return output.map((line) => `> ${line}`).join('\n');
}

/** Zulip's header of a conversation in the mail: `channel > topic`, or who it is with. */
function headerOf(conversation: MissedConversation): string {
  if (conversation.kind === 'channel')
    return `${conversation.channelName} > ${topicDisplayName(conversation.topic)}`;
  if (conversation.kind === 'group') return `You and ${conversation.otherNames.join(', ')}`;
  return `You and ${conversation.senderName}`;
}

/** `<b>Sender</b>: ` at the start of the message's first paragraph, else before it (Zulip's
 * prepend_sender_to_message). */
function senderBefore(html: string, senderName: string): string {
  const name = `<b>${escapeHtml(senderName)}</b>: `;
  const root = parse(`<div>${html}</div>`).firstChild as HTMLElement;
  const first = root.querySelector('*');
  if (first?.tagName === 'P') first.insertAdjacentHTML('afterbegin', name);
  else root.insertAdjacentHTML('afterbegin', name);
  return root.innerHTML;
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
  const htmlParts: string[] = [];
  if (input.showContent) {
    const header = headerOf(input.conversation);
    htmlParts.push(`<p><a href="${escapeHtml(narrowUrl)}"><b>${escapeHtml(header)}</b></a></p>`);
    // A 1:1 conversation's messages are all its sender's: no name before them (Zulip's
    // sender_string).
    const named = input.conversation.kind !== 'direct';
    for (const block of bySender(input.messages))
      block.messages.forEach((message, index) => {
        const body = emailText(message.content, realm.url);
        const html = emailHtml(message.html, realm.url);
        if (named && index === 0) {
          text.push(`${block.senderName}:\n${body}`, '');
          htmlParts.push(senderBefore(html, block.senderName));
        } else {
          text.push(body, '');
          htmlParts.push(html);
        }
      });
  } else {
    const help = `${realm.url}/help/email-notifications#hide-message-content`;
    text.push(
      `This email does not include message content because you have chosen to hide message content in email notifications. See ${help} for more details.`,
      '',
    );
    htmlParts.push(
      `<p>This email does not include message content because you have chosen to <a href="${escapeHtml(help)}">hide message content</a> in email notifications.</p>`,
    );
  }
  // missed_message.txt's footer.
  const realmName = `${realm.name} Zulip`;
  const reply = input.replyByEmail && input.showContent;
  const act = reply
    ? 'Reply to this email directly, or view it in'
    : input.showContent
      ? 'Reply in'
      : 'View or reply in';
  text.push('--', ...(reason ? [reason] : []), '', `${act} ${realmName}:`, '', narrowUrl, '');
  const noReply = input.showContent && !reply;
  if (noReply) text.push('Do not reply to this email.', '');
  text.push('Manage email preferences:', '', settingsUrl);
  htmlParts.push(
    '<div class="email-preferences">&mdash;<br>',
    ...(reason ? [`${escapeHtml(reason)}<br>`] : []),
    reply
      ? `Reply to this email directly, <a href="${escapeHtml(narrowUrl)}">view it in ${escapeHtml(realmName)}</a>, or <a href="${escapeHtml(settingsUrl)}">manage email preferences</a>.`
      : `<a href="${escapeHtml(narrowUrl)}">${act} ${escapeHtml(realmName)}</a>, or <a href="${escapeHtml(settingsUrl)}">manage email preferences</a>.<br>`,
    ...(noReply ? ['Do not reply to this email.'] : []),
    '</div>',
  );
  return { subject: subjectOf(input), text: `${text.join('\n')}\n`, html: htmlParts.join('\n') };
}
