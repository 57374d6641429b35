// Zulip-flavoured Markdown on markdown-it. Raw HTML from users is never passed through
// (html: false escapes it). Mentions are resolved against data the caller loads first
// (Zulip's MentionData): `mentionCandidates` lists the names and ids the content refers to,
// the caller looks them up, and `renderMarkdown` renders and reports who was mentioned.
import MarkdownIt from 'markdown-it';
import { mentionPlugin, type MentionData, type Mentions } from './mentions';

export { mentionCandidates, type MentionCandidates, type MentionData } from './mentions';

export interface Rendered {
  html: string;
  /** `/me` messages (Zulip's is_me_message). */
  isMeMessage: boolean;
  mentions: Mentions;
}

const md = new MarkdownIt({ html: false, linkify: true, breaks: true });
// Zulip has only `#` headings: "Title\n===" stays a paragraph.
md.disable(['lheading']);
md.use(mentionPlugin);

const ME_MESSAGE = /^\/me(?:\s|$)/;

export function renderMarkdown(content: string, data: MentionData = emptyMentionData()): Rendered {
  const mentions: Mentions = {
    userIds: new Set(),
    silentUserIds: new Set(),
    groupIds: new Set(),
    wildcard: null,
  };
  const html = md.render(content, { mentionData: data, mentions }).trimEnd();
  return { html, isMeMessage: ME_MESSAGE.test(content), mentions };
}

/** Markdown inside one paragraph's worth of text, without the wrapping <p> (topic names and
 * other inline contexts). */
export function renderInline(content: string): string {
  return md.renderInline(content);
}

export function emptyMentionData(): MentionData {
  return { usersByName: new Map(), usersById: new Map(), groupsByName: new Map() };
}
