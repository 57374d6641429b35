// Zulip-flavoured Markdown on markdown-it. Raw HTML from users is never passed through
// (html: false escapes it). Mentions are resolved against data the caller loads first
// (Zulip's MentionData): `mentionCandidates` lists the names and ids the content refers to,
// the caller looks them up, and `renderMarkdown` renders and reports who was mentioned.
import MarkdownIt from 'markdown-it';
import { bareLinksPlugin } from './bare-links';
import { blocksPlugin } from './blocks';
import { channelLinkPlugin } from './channels';
import { codeSpansPlugin } from './code-spans';
import { emojiPlugin } from './emoji';
import { escapeText } from './escape';
import { inlineExtrasPlugin } from './inline-extras';
import { lineBreaksPlugin } from './line-breaks';
import { listsPlugin } from './lists';
import { linkifierPlugin } from './linkifiers';
import { localLinksPlugin } from './local-links';
import { mathPlugin } from './math';
import { mentionPlugin, type MentionData, type Mentions } from './mentions';
import { paragraphsPlugin } from './paragraphs';
import { quotesPlugin } from './quotes';
import type { RenderOptions } from './render-options';

export {
  mentionCandidates,
  type MentionCandidates,
  type MentionData,
  type MentionGroup,
  type UploadedImage,
} from './mentions';
export { uploadImageTag, UPLOAD_PLACEHOLDER_SRC } from './inline-extras';
export { channelLinkCandidates } from './channels';
export {
  channelLinkSyntax,
  channelMessageUrl,
  messageLinkSyntax,
  silentMentionSyntax,
  topicLinkSyntax,
  topicNarrowUrl,
} from './link-syntax';
export { canonicalEmojiName, emojiApiData, emojiCodeForName, isEmojiCode } from './emoji';
export { holdsMarkdown, parseFenceLine, type FenceLine } from './fences';
export type { RenderOptions } from './render-options';
export {
  linkifierErrors,
  fillReverseTemplate,
  matchWhole,
  templateVariables,
  topicLinks,
  type Linkifier,
  type TopicLink,
} from './linkifiers';

export interface Rendered {
  html: string;
  /** `/me` messages (Zulip's is_me_message). */
  isMeMessage: boolean;
  /** Has an image preview (has:image); custom emoji images do not count. */
  hasImage: boolean;
  mentions: Mentions;
}

const md = new MarkdownIt({ html: false, linkify: true, breaks: true });
// Zulip has only `#` headings: "Title\n===" stays a paragraph.
md.disable(['lheading']);
// Zulip has no reference-style links: "[x]: url" stays text.
md.disable(['reference']);
// Nor image syntax (its inline patterns have no image_link): "![x](url)" is "!" and a link,
// previewed like any link to an image, so no message embeds an outside image directly.
md.disable(['image']);
md.use(mentionPlugin);
md.use(channelLinkPlugin);
md.use(blocksPlugin);
md.use(mathPlugin);
md.use(inlineExtrasPlugin);
md.use(localLinksPlugin);
md.use(emojiPlugin);
md.use(listsPlugin);
md.use(paragraphsPlugin);
md.use(quotesPlugin);
md.use(lineBreaksPlugin);
md.use(codeSpansPlugin);
md.use(bareLinksPlugin);
md.use(linkifierPlugin);
// Python-Markdown escapes only &, < and > in element content (_escape_cdata): quotes stay as
// typed, in text and in inline code alike; attributes keep theirs escaped.
md.renderer.rules.text = (tokens, index) => escapeText(tokens[index]!.content);
md.renderer.rules.code_inline = (tokens, index, _options, _env, self) => {
  const token = tokens[index]!;
  return `<code${self.renderAttrs(token)}>${escapeText(token.content)}</code>`;
};
// Zulip's strikethrough is <del>, not markdown-it's <s>.
md.renderer.rules.s_open = () => '<del>';
md.renderer.rules.s_close = () => '</del>';

/** Zulip's Message.is_status_message: "/me " and the rest of the line. */
const ME_MESSAGE = /^\/me /;

export function renderMarkdown(
  content: string,
  data: MentionData = emptyMentionData(),
  options: RenderOptions = {},
): Rendered {
  const mentions: Mentions = {
    userIds: new Set(),
    silentUserIds: new Set(),
    groupIds: new Set(),
    wildcard: null,
  };
  const html = md.render(content, { mentionData: data, mentions, options }).trimEnd();
  // Users' text never holds a raw "<" here (it is escaped), so this finds only previews.
  const hasImage = html.includes('<div class="message_inline_image">');
  return { html, isMeMessage: ME_MESSAGE.test(content), hasImage, mentions };
}

export function emptyMentionData(): MentionData {
  return { usersByName: new Map(), usersById: new Map(), groupsByName: new Map() };
}
