// Emoji: `:name:`, emoticons and Unicode emoji become Zulip's
// <span class="emoji emoji-<code>" …>:name:</span>. The names are Zulip's own table
// (generated/emoji-names.json, built by scripts/generate-emoji-names.ts): every canonical name
// and alias can be typed, and a literal emoji shows its canonical name. Like Zulip's inline
// patterns, three passes run in turn (names, then emoticons, then Unicode emoji), and text one
// pass has claimed is never looked at again by a later one.
import type { MarkdownIt, StateCore } from 'markdown-it';
import generatedNames from './generated/emoji-names.json';
import { escapeHtml } from './escape';
import { rewriteTextOutsideLinks } from './text-tokens';

interface EmojiNames {
  canonical_name: string;
  aliases: string[];
}

const EMOJI_NAMES = generatedNames as Record<string, EmojiNames>;

/** Zulip's name_to_codepoint: canonical names and aliases alike (no two emoji share a name). */
const nameToCode = new Map<string, string>();
/** Zulip's codepoint_to_name: the canonical name only. */
const codeToName = new Map<string, string>();
for (const [code, { canonical_name, aliases }] of Object.entries(EMOJI_NAMES)) {
  codeToName.set(code, canonical_name);
  for (const name of [canonical_name, ...aliases]) nameToCode.set(name, code);
}

/** Zulip's emoji code: code points in hex, four digits at least, without variation selectors. */
export function emojiCode(text: string): string {
  return [...text]
    .map((char) => char.codePointAt(0)!)
    .filter((point) => point !== 0xfe0f)
    .map((point) => point.toString(16).padStart(4, '0'))
    .join('-');
}

export function emojiHtml(name: string, code: string): string {
  const label = name.replace(/_/g, ' ');
  return `<span aria-label="${label}" class="emoji emoji-${code}" role="img" title="${label}">:${name}:</span>`;
}

/** The code of a known emoji name, canonical or alias (for reaction validation too). */
export function emojiCodeForName(name: string): string | undefined {
  return nameToCode.get(name);
}

/** Whether `code` is the code of a known Unicode emoji. */
export function isEmojiCode(code: string): boolean {
  return codeToName.has(code);
}

/** The name Zulip shows for an emoji code (what a literal emoji renders as). */
export function canonicalEmojiName(code: string): string | undefined {
  return codeToName.get(code);
}

/** Zulip's emoji_api.json (server_emoji_data_url): every Unicode emoji's names, canonical
 * first, then its aliases. Clients (zulip-flutter) build their emoji picker from it. */
export function emojiApiData(): { code_to_names: Record<string, string[]> } {
  return {
    code_to_names: Object.fromEntries(
      Object.entries(EMOJI_NAMES).map(([code, { canonical_name, aliases }]) => [
        code,
        [canonical_name, ...aliases],
      ]),
    ),
  };
}

// Zulip's EMOJI_REGEX, `:[\w\-\+]+:`, is Python's Unicode \w: letters and numbers of any
// script and the underscore (names such as flag_türkiye, piñata, +1 and 100 exist).
const NAMED = /:[\p{L}\p{N}_+-]+:/gu;

// Zulip's POSSIBLE_EMOJI_RE, after UTS #51's EBNF: a flag (two regional indicators) or an emoji
// with an optional skin tone, emoji presentation (maybe as a keycap) or tag sequence, and more
// of those joined by ZWJ. Whether the whole sequence is known is decided afterwards.
const EMOJI_ELEMENT = String.raw`\p{Emoji}(?:\p{Emoji_Modifier}|\u{FE0F}\u{20E3}?|[\u{E0020}-\u{E007E}]+\u{E007F})?`;
const FLAG = String.raw`\p{Regional_Indicator}\p{Regional_Indicator}`;
const POSSIBLE_EMOJI = new RegExp(
  `(?:${FLAG}|${EMOJI_ELEMENT})(?:\\u{200D}(?:${FLAG}|${EMOJI_ELEMENT}))*`,
  'gu',
);
// Zulip's TEXT_PRESENTATION_RE: a lone character that is text by default (❤, ©, a digit)
// stays text; only its emoji form (❤️, with U+FE0F) becomes an emoji.
const TEXT_PRESENTATION = /^\P{Emoji_Presentation}\u{20E3}?$/u;

/** Zulip's EMOTICON_CONVERSIONS (tools/setup/emoji/emoji_setup_utils.py, of the same era as
 * the name table), in its order: the alternation tries them in this order. */
const EMOTICONS: Record<string, string> = {
  ':)': 'smile',
  '(:': 'smile',
  ':(': 'frown',
  '<3': 'heart',
  ':|': 'neutral',
  ':/': 'confused',
  ';)': 'wink',
  ':D': 'grinning',
  ':o': 'open_mouth',
  ':O': 'open_mouth',
  ':p': 'stuck_out_tongue',
  ':P': 'stuck_out_tongue',
};
// Zulip's EMOTICON_RE: an emoticon counts only between "terminal symbols" (the compose box's
// list) or the ends of the text, so "http://" or "a:b" stay as they are.
const TERMINAL = String.raw`,.;?!()\[\] "'\n\t`;
const EMOTICON = new RegExp(
  `(?<![^${TERMINAL}])(?:${Object.keys(EMOTICONS)
    .map((emoticon) => emoticon.replace(/[()|/]/g, '\\$&'))
    .join('|')})(?![^${TERMINAL}])`,
  'g',
);

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

/** Custom emoji win over Unicode ones of the same name, as in Zulip. The name stays as typed,
 * so an alias shows as that alias. */
function namedEmojiHtml(name: string, realmEmoji: Map<string, RealmEmojiImage>): string | null {
  const custom = realmEmoji.get(name);
  if (custom) return imageEmojiHtml(name, custom.sourceUrl);
  if (name === 'zulip') return imageEmojiHtml(name, ZULIP_EMOJI_URL);
  const code = nameToCode.get(name);
  return code ? emojiHtml(name, code) : null;
}

/** A literal emoji sequence under its canonical name; null leaves it as typed (text-style
 * characters, and sequences Zulip has no name for, such as skin-toned ones). */
function unicodeEmojiHtml(sequence: string): string | null {
  if (TEXT_PRESENTATION.test(sequence)) return null;
  const code = emojiCode(sequence);
  const name = codeToName.get(code);
  return name === undefined ? null : emojiHtml(name, code);
}

function escapeText(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Text still open to later passes, or finished HTML that no later pass may touch (Zulip's
 * stashed placeholders). */
type Segment = { text: string } | { html: string; emoji: boolean };

/** What a pass makes of a match: HTML to keep (emoji: whether it is one), or null to leave
 * the match as text for later passes. */
type Handler = (match: string) => { html: string; emoji: boolean } | null;

// Stands for claimed text next to a segment while matching: like Zulip's placeholder
// characters, it is neither a terminal symbol nor part of any name or emoji.
const CLAIMED = '\0';

/** Runs one pass over the open text, leftmost match first. Finished neighbours are shown to
 * the pattern as CLAIMED so emoticon boundaries see them as Zulip does. */
function runPass(segments: Segment[], pattern: RegExp, handle: Handler): Segment[] {
  const result: Segment[] = [];
  segments.forEach((segment, index) => {
    if (!('text' in segment)) {
      result.push(segment);
      return;
    }
    let before = index > 0 && !('text' in segments[index - 1]!);
    const after = index + 1 < segments.length && !('text' in segments[index + 1]!);
    let rest = segment.text;
    for (;;) {
      const found = firstHandled(rest, before, after, pattern, handle);
      if (!found) break;
      if (found.start > 0) result.push({ text: rest.slice(0, found.start) });
      result.push(found.piece);
      rest = rest.slice(found.end);
      before = true;
    }
    if (rest !== '') result.push({ text: rest });
  });
  return result;
}

/** The first match in `text` that `handle` takes, with its position in `text`. */
function firstHandled(
  text: string,
  before: boolean,
  after: boolean,
  pattern: RegExp,
  handle: Handler,
): { start: number; end: number; piece: Segment } | null {
  const offset = before ? CLAIMED.length : 0;
  const probe = (before ? CLAIMED : '') + text + (after ? CLAIMED : '');
  for (const match of probe.matchAll(pattern)) {
    const piece = handle(match[0]);
    if (piece) {
      const start = match.index - offset;
      return { start, end: start + match[0].length, piece };
    }
  }
  return null;
}

function replaceInText(
  text: string,
  options: Options,
  realmEmoji: Map<string, RealmEmojiImage>,
): string | null {
  // An unknown :name: is claimed too: it stays literal, and its colons do not start another.
  let segments = runPass([{ text }], NAMED, (match) => {
    const html = namedEmojiHtml(match.slice(1, -1), realmEmoji);
    return html ? { html, emoji: true } : { html: escapeText(match), emoji: false };
  });
  if (options.translateEmoticons)
    segments = runPass(segments, EMOTICON, (match) => {
      const name = EMOTICONS[match]!;
      return { html: emojiHtml(name, nameToCode.get(name)!), emoji: true };
    });
  segments = runPass(segments, POSSIBLE_EMOJI, (match) => {
    const html = unicodeEmojiHtml(match);
    return html ? { html, emoji: true } : null;
  });
  if (!segments.some((segment) => 'emoji' in segment && segment.emoji)) return null;
  return segments
    .map((segment) => ('text' in segment ? escapeText(segment.text) : segment.html))
    .join('');
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
    const html = replaceInText(text, options, realmEmoji);
    if (html === null) return null;
    const token = new state.Token('html_inline', '', 0);
    token.content = html;
    return [token];
  });
}

export function emojiPlugin(md: MarkdownIt): void {
  md.core.ruler.push('zulip_emoji', emojiRule);
}
