// Smaller Zulip inline rules: global times (<time:…>), no underscore emphasis, links with
// empty text showing their URL, and inline previews of linked images and uploaded images.
import type { MarkdownIt, StateCore, StateInline } from 'markdown-it';
import { escapeHtml as escape } from './escape';
import type { UploadedImage } from './mentions';
import { renderOptions } from './render-options';

/** Zulip's common_timezones (zerver/lib/timezone.py), the abbreviations its date parser takes,
 * as offsets from UTC in seconds. Some are ambiguous (IST, CST): Zulip's choice stands. */
const ZONE_ABBREVIATIONS: Record<string, number> = {
  SST: -39600,
  HST: -36000,
  AKST: -32400,
  HDT: -32400,
  AKDT: -28800,
  PST: -28800,
  MST: -25200,
  PDT: -25200,
  CST: -21600,
  MDT: -21600,
  CDT: -18000,
  EST: -18000,
  AST: -14400,
  EDT: -14400,
  NST: -12600,
  ADT: -10800,
  NDT: -9000,
  GMT: 0,
  UTC: 0,
  WET: 0,
  BST: 3600,
  CET: 3600,
  MET: 3600,
  WAT: 3600,
  WEST: 3600,
  CAT: 7200,
  CEST: 7200,
  EET: 7200,
  MEST: 7200,
  SAST: 7200,
  EAT: 10800,
  EEST: 10800,
  IDT: 10800,
  MSK: 10800,
  PKT: 18000,
  IST: 19800,
  WIB: 25200,
  AWST: 28800,
  HKT: 28800,
  WITA: 28800,
  JST: 32400,
  KST: 32400,
  WIT: 32400,
  ACST: 34200,
  AEST: 36000,
  ChST: 36000,
  ACDT: 37800,
  AEDT: 39600,
  NZST: 43200,
  NZDT: 46800,
};

/** A time Zulip's clients show in each reader's zone: an ISO date, a UNIX timestamp, or an
 * English date such as "Jun 5th 2017, 10:30PM" (taken as UTC unless it ends with an offset or
 * one of Zulip's zone abbreviations). */
export function parseTime(text: string): Date | null {
  const trimmed = text.trim();
  if (/^\d{1,12}(?:\.\d+)?$/.test(trimmed)) return new Date(Number(trimmed) * 1000);
  let cleaned = trimmed.replace(/(\d)(st|nd|rd|th)\b/gi, '$1').replace(/(\d)(am|pm)\b/gi, '$1 $2');
  let offsetSeconds = 0;
  const abbreviation = /\s([A-Za-z]{2,5})$/.exec(cleaned)?.[1];
  if (abbreviation !== undefined && Object.hasOwn(ZONE_ABBREVIATIONS, abbreviation)) {
    offsetSeconds = ZONE_ABBREVIATIONS[abbreviation]!;
    cleaned = cleaned.slice(0, -abbreviation.length).trimEnd();
  }
  const hasZone = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(cleaned);
  const time = Date.parse(hasZone ? cleaned : `${cleaned} UTC`);
  return Number.isNaN(time) ? null : new Date(time - offsetSeconds * 1000);
}

function timeRule(state: StateInline, silent: boolean): boolean {
  if (!state.src.startsWith('<time:', state.pos)) return false;
  const end = state.src.indexOf('>', state.pos);
  if (end === -1) return false;
  const text = state.src.slice(state.pos + 6, end);
  if (!silent) {
    const token = state.push('html_inline', '', 0);
    const date = parseTime(text);
    token.content = date
      ? `<time datetime="${date.toISOString().replace('.000Z', 'Z')}">${escape(text)}</time>`
      : `<span class="timestamp-error">Invalid time format: ${escape(text)}</span>`;
  }
  state.pos = end + 1;
  return true;
}

/** Zulip disables underscore emphasis: runs of _ are plain text. */
function underscoreRule(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x5f /* _ */) return false;
  let end = state.pos;
  while (state.src.charCodeAt(end) === 0x5f) end += 1;
  if (!silent) state.pending += state.src.slice(state.pos, end);
  state.pos = end;
  return true;
}

const IMAGE_PATH = /\.(?:bmp|gif|jpe?g|png|webp)$/i;

function imagePreview(href: string, title: string | null): string {
  const url = encodeURIComponent(href);
  const titleAttribute = title ? ` title="${escape(title)}"` : '';
  return (
    `<div class="message_inline_image"><a href="${escape(href)}"${titleAttribute}>` +
    `<img data-src-fullsize="/thumbnail?url=${url}&amp;size=full" ` +
    `src="/thumbnail?url=${url}&amp;size=thumbnail"></a></div>`
  );
}

const UPLOAD_PREFIX = '/user_uploads/';

/** Zulip's loading spinner, shown until the thumbnail exists. */
export const UPLOAD_PLACEHOLDER_SRC = '/static/images/loading/loader-black.svg';

/** The <img> of an uploaded image's preview, as Zulip 9+ renders it (attributes in its
 * order): the loading placeholder while the thumbnail is being made, then the thumbnail with
 * the original's dimensions and type, for the client's layout and its choice of format.
 * Used both when rendering and when the thumbnail job rewrites a rendered message. */
export function uploadImageTag(image: UploadedImage): string {
  const original =
    `data-original-content-type="${escape(image.contentType)}" ` +
    `data-original-dimensions="${image.width}x${image.height}"`;
  if (!image.thumbnail)
    return `<img class="image-loading-placeholder" ${original} src="${UPLOAD_PLACEHOLDER_SRC}">`;
  const animated = image.thumbnail.animated ? 'data-animated="true" ' : '';
  return `<img ${animated}${original} src="${escape(image.thumbnail.url)}">`;
}

/** Zulip's preview of an uploaded image: a link to the original around its thumbnail. */
function uploadPreview(href: string, title: string | null, image: UploadedImage): string {
  const titleAttribute = title ? ` title="${escape(title)}"` : '';
  return (
    `<div class="message_inline_image"><a href="${escape(href)}"${titleAttribute}>` +
    `${uploadImageTag(image)}</a></div>`
  );
}

function uploadedImage(href: string, env: unknown): UploadedImage | undefined {
  // Also "user_uploads/…": the organization's full upload URL made relative (local-links.ts),
  // which Zulip resolves against "/" when it looks the upload up.
  const path = href.startsWith(UPLOAD_PREFIX.slice(1)) ? `/${href}` : href;
  if (!path.startsWith(UPLOAD_PREFIX)) return undefined;
  const uploads = (env as { mentionData?: { uploads?: Map<string, UploadedImage> } }).mentionData
    ?.uploads;
  let pathId = path.slice(UPLOAD_PREFIX.length);
  try {
    pathId = decodeURIComponent(pathId);
  } catch {
    return undefined;
  }
  return uploads?.get(pathId);
}

function isImage(href: string): boolean {
  try {
    const url = new URL(href);
    return (url.protocol === 'http:' || url.protocol === 'https:') && IMAGE_PATH.test(url.pathname);
  } catch {
    return false;
  }
}

/** Links whose text is blank show their URL; image links get a preview after their
 * paragraph (inside the item for tight lists). */
function linksRule(state: StateCore): void {
  const tokens = state.tokens;
  const env = state.env as { inBlockquote?: boolean; previewedUrls?: Set<string> };
  // Zulip's InlineInterestingLinkProcessor: each URL previewed once per message, none inside
  // a quote.
  const previewed = (env.previewedUrls ??= new Set());
  // Zulip's is_image answers false for every URL when the organization turned previews off.
  const previewsEnabled = renderOptions(state.env).imagePreviews !== false;
  let quoteDepth = env.inBlockquote ? 1 : 0;
  for (let i = 0; i < tokens.length; i += 1) {
    const inline = tokens[i]!;
    if (inline.type === 'blockquote_open') quoteDepth += 1;
    if (inline.type === 'blockquote_close') quoteDepth -= 1;
    if (inline.type !== 'inline' || !inline.children) continue;
    const previews: string[] = [];
    const children = inline.children;
    let onlyLink = false;
    for (let j = 0; j < children.length; j += 1) {
      const open = children[j]!;
      if (open.type !== 'link_open') continue;
      const href = String(open.attrGet('href') ?? '');
      let close = children.findIndex((t, k) => k > j && t.type === 'link_close');
      const inner = children.slice(j + 1, close);
      const text = inner.map((t) => t.content).join('');
      if (text.trim() === '') {
        const token = new state.Token('text', '', 0);
        token.content = href;
        children.splice(j + 1, close - j - 1, token);
        close = j + 2;
      }
      const title = text.trim() !== '' && text !== href ? text : null;
      if (!previewsEnabled || quoteDepth > 0 || previewed.has(href)) continue;
      const upload = uploadedImage(href, state.env);
      const preview = upload
        ? uploadPreview(href, title, upload)
        : isImage(href)
          ? imagePreview(href, title)
          : null;
      if (preview === null) continue;
      previewed.add(href);
      previews.push(preview);
      // Zulip's get_inlining_information: a paragraph that is nothing but a link showing its
      // own URL gives way to the preview.
      onlyLink = j === 0 && close === children.length - 1 && (title === null || text === href);
    }
    if (previews.length === 0) continue;
    const paragraphOpen = tokens[i - 1];
    const paragraphClose = tokens[i + 1];
    if (
      onlyLink &&
      previews.length === 1 &&
      paragraphOpen?.type === 'paragraph_open' &&
      paragraphClose?.type === 'paragraph_close' &&
      !paragraphClose.hidden
    ) {
      const block = new state.Token('html_block', '', 0);
      block.content = previews[0]!;
      tokens.splice(i - 1, 3, block);
      i -= 1;
      continue;
    }
    if (paragraphClose?.type === 'paragraph_close' && !paragraphClose.hidden) {
      const block = new state.Token('html_block', '', 0);
      // Zulip adds previews after laying out the HTML: no newline follows them.
      block.content = previews.join('');
      tokens.splice(i + 2, 0, block);
    } else {
      const html = new state.Token('html_inline', '', 0);
      html.content = previews.join('');
      children.push(html);
    }
  }
}

/** A Zulip pattern that wraps its inner text in tags (Python-Markdown's SimpleTagPattern and
 * DoubleTagPattern): `pattern`'s first group is the opening delimiter, its second the inner
 * text, parsed as inline Markdown of its own. `tags` are token names, outermost first. */
function tagPattern(pattern: RegExp, tags: [type: string, tag: string][]) {
  const sticky = new RegExp(pattern.source, 'y');
  return (state: StateInline, silent: boolean): boolean => {
    sticky.lastIndex = state.pos;
    const match = sticky.exec(state.src);
    // Read now: the inner text's parse may run this rule again.
    const end = sticky.lastIndex;
    if (!match || end > state.posMax) return false;
    if (!silent) {
      const start = state.pos + match[1]!.length;
      for (const [type, tag] of tags) state.push(`${type}_open`, tag, 1);
      const max = state.posMax;
      state.pos = start;
      state.posMax = start + match[2]!.length;
      state.md.inline.tokenize(state);
      state.posMax = max;
      for (const [type, tag] of [...tags].reverse()) state.push(`${type}_close`, tag, -1);
    }
    state.pos = end;
    return true;
  };
}

/** Zulip's STRONG_EM_RE (a DoubleTagPattern "strong,em"): `***x***` is strong around em. */
const strongEmRule = tagPattern(/(\*\*\*)(?!\s+)([^*^\n]+)(?<!\s)\*\*\*/, [
  ['strong', 'strong'],
  ['em', 'em'],
]);

/** Zulip's DEL_RE: two tildes each side, not more, around anything but tildes on one line
 * (spaces inside the delimiters too, unlike CommonMark's flanking rules). */
const strikethroughRule = tagPattern(/(?<!~)(~~)([^~\n]+?)~~(?!~)/, [['s', 'del']]);

export function inlineExtrasPlugin(md: MarkdownIt): void {
  md.inline.ruler.before('autolink', 'zulip_time', timeRule);
  md.inline.ruler.before('emphasis', 'zulip_strong_em', strongEmRule);
  md.inline.ruler.before('emphasis', 'zulip_underscore', underscoreRule);
  md.inline.ruler.before('strikethrough', 'zulip_strikethrough', strikethroughRule);
  md.disable('strikethrough');
  md.core.ruler.after('inline', 'zulip_links', linksRule);
}
