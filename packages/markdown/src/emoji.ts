// Emoji: `:name:` and Unicode emoji both become Zulip's
// <span class="emoji emoji-<code>" …>:name:</span>. Names and codes come from the Unicode
// emoji data of the unicode-emoji-json package; where Zulip's canonical name differs from
// the Unicode one for a common emoji, Zulip's wins (ZULIP_NAMES). Sequences newer than the
// emoji Zulip knows (Emoji 15.0) stay as typed.
import type { MarkdownIt, StateCore } from 'markdown-it';
import byEmoji from 'unicode-emoji-json/data-by-emoji.json';
import { escapeHtml } from './escape';
import { rewriteTextOutsideLinks } from './text-tokens';

/** Zulip's names for emoji whose Unicode short name Zulip does not use. */
const ZULIP_NAMES: Record<string, string> = {
  '1f642': 'smile',
  '1f603': 'smiley',
  '1f641': 'frown',
  '2764': 'heart',
  '1f4a9': 'poop',
  '1f384': 'holiday_tree',
  '0023-20e3': 'hash',
};

/** translate_emoticons: these become the emoji of that name. */
const EMOTICONS: Record<string, string> = {
  ':)': 'smile',
  '(:': 'smile',
  ':(': 'frown',
  '<3': 'heart',
};

const MAX_EMOJI_VERSION = 15.0;

/** Zulip's emoji code: code points in hex, four digits at least, without variation selectors. */
export function emojiCode(text: string): string {
  return [...text]
    .map((char) => char.codePointAt(0)!)
    .filter((point) => point !== 0xfe0f)
    .map((point) => point.toString(16).padStart(4, '0'))
    .join('-');
}

const nameToCode = new Map<string, string>();
const codeToName = new Map<string, string>();
for (const [emoji, data] of Object.entries(
  byEmoji as Record<string, { slug: string; emoji_version: string }>,
)) {
  if (Number(data.emoji_version) > MAX_EMOJI_VERSION) continue;
  const code = emojiCode(emoji);
  const name = ZULIP_NAMES[code] ?? data.slug;
  codeToName.set(code, name);
  nameToCode.set(name, code);
}
for (const [code, name] of Object.entries(ZULIP_NAMES)) nameToCode.set(name, code);

export function emojiHtml(name: string, code: string): string {
  const label = name.replace(/_/g, ' ');
  return `<span aria-label="${label}" class="emoji emoji-${code}" role="img" title="${label}">:${name}:</span>`;
}

/** The code of a known emoji name (for reaction validation too). */
export function emojiCodeForName(name: string): string | undefined {
  return nameToCode.get(name);
}

/** Whether `code` is the code of a known Unicode emoji. */
export function isEmojiCode(code: string): boolean {
  return codeToName.has(code);
}

// A whole emoji sequence: a pictograph or keycap base with modifiers, joined by ZWJ.
const SEQUENCE =
  /(?:[#*0-9]\ufe0f?\u20e3|\p{Regional_Indicator}{2}|\p{Extended_Pictographic}\ufe0f?[\u{1f3fb}-\u{1f3ff}]?(?:\u200d\p{Extended_Pictographic}\ufe0f?[\u{1f3fb}-\u{1f3ff}]?)*)/gu;
const NAMED = /:([\w+-]+):/g;

interface Options {
  translateEmoticons?: boolean;
}

/** An organization's custom emoji, as rendering needs it. */
export interface RealmEmojiImage {
  sourceUrl: string;
}

/** Zulip's own custom emoji, present in every organization. */
const ZULIP_EMOJI_URL = '/static/generated/emoji/images/emoji/unicode/zulip.png';

/** Zulip's make_realm_emoji: an image with the :name: as its text alternative. */
function imageEmojiHtml(name: string, src: string): string {
  return `<img alt=":${name}:" class="emoji" src="${escapeHtml(src)}" title="${name.replace(/_/g, ' ')}">`;
}

/** Custom emoji win over Unicode ones of the same name, as in Zulip. */
function namedEmojiHtml(name: string, realmEmoji: Map<string, RealmEmojiImage>): string | null {
  const custom = realmEmoji.get(name);
  if (custom) return imageEmojiHtml(name, custom.sourceUrl);
  if (name === 'zulip') return imageEmojiHtml(name, ZULIP_EMOJI_URL);
  const code = nameToCode.get(name);
  return code ? emojiHtml(name, code) : null;
}

function replaceInText(
  text: string,
  options: Options,
  realmEmoji: Map<string, RealmEmojiImage>,
): { html: string; changed: boolean } {
  let changed = false;
  const escapeText = (value: string) =>
    value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  let source = text;
  if (options.translateEmoticons) {
    source = source.replace(
      /(^|\s)(:\)|\(:|:\(|<3)(?=$|\s|[.,;!?])/g,
      (_, lead: string, emoticon: string) => {
        changed = true;
        return `${lead}:${EMOTICONS[emoticon]}:`;
      },
    );
  }
  let html = '';
  let last = 0;
  const pieces: { start: number; end: number; html: string }[] = [];
  for (const match of source.matchAll(NAMED)) {
    const html = namedEmojiHtml(match[1]!, realmEmoji);
    if (html) pieces.push({ start: match.index, end: match.index + match[0].length, html });
  }
  // Named matches overlap (":cat:hello:dog:"): keep them left to right, skipping overlaps.
  const accepted: typeof pieces = [];
  let cursor = 0;
  for (const piece of pieces)
    if (piece.start >= cursor) {
      accepted.push(piece);
      cursor = piece.end;
    }
  const unicode: typeof pieces = [];
  for (const match of source.matchAll(SEQUENCE)) {
    const start = match.index;
    if (accepted.some((p) => start >= p.start && start < p.end)) continue;
    const code = emojiCode(match[0]);
    const name = codeToName.get(code);
    if (name) unicode.push({ start, end: start + match[0].length, html: emojiHtml(name, code) });
  }
  for (const piece of [...accepted, ...unicode].sort((a, b) => a.start - b.start)) {
    html += escapeText(source.slice(last, piece.start)) + piece.html;
    last = piece.end;
    changed = true;
  }
  html += escapeText(source.slice(last));
  return { html, changed };
}

const NO_REALM_EMOJI = new Map<string, RealmEmojiImage>();

function emojiRule(state: StateCore): void {
  const env = state.env as {
    options?: Options;
    mentionData?: { realmEmoji?: Map<string, RealmEmojiImage> };
  };
  const options = env.options ?? {};
  const realmEmoji = env.mentionData?.realmEmoji ?? NO_REALM_EMOJI;
  rewriteTextOutsideLinks(state, (text) => {
    const { html, changed } = replaceInText(text, options, realmEmoji);
    if (!changed) return null;
    const token = new state.Token('html_inline', '', 0);
    token.content = html;
    return [token];
  });
}

export function emojiPlugin(md: MarkdownIt): void {
  md.core.ruler.push('zulip_emoji', emojiRule);
}
