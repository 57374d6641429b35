// User, wildcard and user-group mentions (Zulip's usermention / usergroupmention patterns):
//   @**Full Name**  @**Full Name|id**  @_**Full Name** (silent, no notification)
//   @**all** @**everyone** @**channel** @**stream** (channel wildcard)  @**topic** (topic wildcard)
//   @*group*  @_*group* (silent)
// Unknown names stay as typed.
import type { RealmEmojiImage } from './emoji';
import type { Linkifier } from './linkifiers';
import type { MarkdownIt, StateInline } from 'markdown-it';
import { escapeHtml as escape } from './escape';

export interface MentionUser {
  id: number;
  fullName: string;
}

export interface MentionGroup {
  id: number;
  name: string;
  /** What the mention shows, when not the name (a system group's display name). */
  displayName?: string;
  /** A deactivated group's mention renders, silently: it notifies nobody. */
  deactivated?: boolean;
}

/** What the content's mentions resolve to, loaded by the caller. Names are keyed lower-case;
 * a name several users share is ambiguous unless written with its id. */
export interface MentionData {
  usersByName: Map<string, MentionUser[]>;
  usersById: Map<number, MentionUser>;
  groupsByName: Map<string, MentionGroup>;
  /** Channels that #**name** links may point at, keyed lower-case. */
  channelsByName?: Map<string, { id: number; name: string }>;
  /** The organization's linkifiers, in their order. */
  linkifiers?: readonly Linkifier[];
  /** The organization's active custom emoji, by name. */
  realmEmoji?: Map<string, RealmEmojiImage>;
  /** Uploaded images the content links to, by path id (what follows /user_uploads/). */
  uploads?: Map<string, UploadedImage>;
}

export interface UploadedImage {
  contentType: string;
  width: number;
  height: number;
  /** The thumbnail shown once made (Zulip 9+); absent while it is pending. */
  thumbnail?: { url: string; animated: boolean };
}

export interface Mentions {
  /** Users mentioned with notification (they get the `mentioned` flag). */
  userIds: Set<number>;
  /** Silently mentioned users: rendered, no flag. */
  silentUserIds: Set<number>;
  /** Groups mentioned with notification (their members get `mentioned`). */
  groupIds: Set<number>;
  /** The strongest non-silent wildcard: a channel wildcard or a topic wildcard. */
  wildcard: 'channel' | 'topic' | null;
}

export interface MentionCandidates {
  names: Set<string>;
  ids: Set<number>;
  groupNames: Set<string>;
}

const CHANNEL_WILDCARDS = new Set(['all', 'everyone', 'channel', 'stream']);
const USER_MENTION = /@_?\*\*([^*]+)\*\*/g;
const GROUP_MENTION = /@_?\*([^*]+)\*/g;

/** Names and ids the content may mention, for the caller to look up before rendering. */
export function mentionCandidates(content: string): MentionCandidates {
  const result: MentionCandidates = { names: new Set(), ids: new Set(), groupNames: new Set() };
  for (const [, inner] of content.matchAll(USER_MENTION)) {
    const { name, id } = splitMention(inner!);
    if (id !== null) result.ids.add(id);
    else if (!CHANNEL_WILDCARDS.has(name.toLowerCase()) && name.toLowerCase() !== 'topic')
      result.names.add(name.toLowerCase());
  }
  for (const [whole, inner] of content.matchAll(GROUP_MENTION)) {
    if (!whole.includes('**')) result.groupNames.add(inner!.toLowerCase());
  }
  return result;
}

function splitMention(inner: string): { name: string; id: number | null } {
  const bar = inner.lastIndexOf('|');
  if (bar !== -1 && /^\d{1,10}$/.test(inner.slice(bar + 1))) {
    const id = Number(inner.slice(bar + 1));
    if (id <= 2 ** 31 - 1) return { name: inner.slice(0, bar), id };
  }
  return { name: inner, id: null };
}

interface Env {
  mentionData: MentionData;
  mentions: Mentions;
}

export function mentionPlugin(md: MarkdownIt): void {
  md.inline.ruler.before('emphasis', 'zulip_mention', (state: StateInline, silent: boolean) => {
    const src = state.src.slice(state.pos);
    if (!src.startsWith('@')) return false;
    const match = /^@(_?)(\*\*([^*]+)\*\*|\*([^*]+)\*)/.exec(src);
    if (!match) return false;
    const env = state.env as unknown as Env;
    const isSilent = match[1] === '_';
    const html =
      match[3] !== undefined
        ? userMention(match[3], isSilent, env)
        : groupMention(match[4]!, isSilent, env);
    if (html === null) return false;
    if (!silent) {
      const token = state.push('html_inline', '', 0);
      token.content = html;
    }
    state.pos += match[0].length;
    return true;
  });
}

function userMention(inner: string, silent: boolean, env: Env): string | null {
  const { name, id } = splitMention(inner);
  const lower = name.toLowerCase();
  if (id === null && CHANNEL_WILDCARDS.has(lower)) {
    if (!silent) env.mentions.wildcard = 'channel';
    return `<span class="user-mention channel-wildcard-mention${silent ? ' silent' : ''}" data-user-id="*">${silent ? '' : '@'}${escape(name)}</span>`;
  }
  if (id === null && lower === 'topic') {
    if (!silent && env.mentions.wildcard === null) env.mentions.wildcard = 'topic';
    return `<span class="topic-mention${silent ? ' silent' : ''}">${silent ? '' : '@'}${escape(name)}</span>`;
  }
  let user: MentionUser | undefined;
  if (id !== null) {
    user = env.mentionData.usersById.get(id);
    // With an id the name must match too (Zulip ignores mismatches), unless only the id is
    // given as the name ("@**|id**" is not valid syntax, so a name is always present).
    if (user && user.fullName.toLowerCase() !== lower) user = undefined;
  } else {
    const users = env.mentionData.usersByName.get(lower) ?? [];
    if (users.length === 1) user = users[0];
  }
  if (!user) return null;
  (silent ? env.mentions.silentUserIds : env.mentions.userIds).add(user.id);
  return `<span class="user-mention${silent ? ' silent' : ''}" data-user-id="${user.id}">${silent ? '' : '@'}${escape(user.fullName)}</span>`;
}

function groupMention(name: string, silent: boolean, env: Env): string | null {
  const group = env.mentionData.groupsByName.get(name.toLowerCase());
  if (!group) return null;
  const quiet = silent || group.deactivated === true;
  if (!quiet) env.mentions.groupIds.add(group.id);
  return `<span class="user-group-mention${quiet ? ' silent' : ''}" data-user-group-id="${group.id}">${quiet ? '' : '@'}${escape(group.displayName ?? group.name)}</span>`;
}
