// Realm linkifiers (Zulip's RealmFilter): an administrator's regular expression whose matches
// in message text become links built from an RFC 6570 URL template. Patterns run on RE2 (the
// re2js port), as upstream does, so no pattern can backtrack for ever. The same matching
// produces a message's `topic_links`, together with plain URLs found in the topic.
import MarkdownIt, { type MarkdownIt as Md, type StateCore, type Token } from 'markdown-it';
import { RE2JS, RE2JSSyntaxException } from 're2js';
import { parse as parseTemplate } from 'uri-template';
import { rewriteTextOutsideLinks } from './text-tokens';

export interface Linkifier {
  pattern: string;
  urlTemplate: string;
}

export interface TopicLink {
  text: string;
  url: string;
}

// Names of the wrapping groups; RE2 rejects a pattern that reuses them.
const BEFORE = 'linkifier_before_match';
const OUTER = 'linkifier_actual_match';
const AFTER = 'linkifier_after_match';

/** Zulip's prepare_linkifier_pattern: a match must start the text or follow white space or an
 * opening delimiter, and must not run into a letter or digit. */
function wrap(pattern: string): string {
  return `(?P<${BEFORE}>^|\\s|\\x{85}|\\pZ|['"\\(,:<])(?P<${OUTER}>${pattern})(?P<${AFTER}>$|[^\\pL\\pN])`;
}

interface Compiled {
  regex: RE2JS;
  expand: (values: Record<string, unknown>) => string;
  groups: string[];
}

// Compiling is the expensive part and a realm's linkifiers rarely change.
const compiledCache = new Map<string, Compiled | null>();
const MAX_CACHED = 1000;

function compile(linkifier: Linkifier): Compiled | null {
  const key = `${linkifier.pattern}\u0000${linkifier.urlTemplate}`;
  if (compiledCache.has(key)) return compiledCache.get(key)!;
  let compiled: Compiled | null = null;
  try {
    const regex = RE2JS.compile(wrap(linkifier.pattern));
    const groups = Object.keys(regex.namedGroups());
    compiled = { regex, expand: parseTemplate(linkifier.urlTemplate).expand, groups };
  } catch {
    // Stored linkifiers were validated; one that no longer compiles simply matches nothing.
  }
  if (compiledCache.size >= MAX_CACHED) compiledCache.clear();
  compiledCache.set(key, compiled);
  return compiled;
}

interface Match {
  start: number;
  end: number;
  text: string;
  url: string;
}

/** Matches of one linkifier in `text`, left to right and not overlapping. */
function findMatches(text: string, compiled: Compiled): Match[] {
  const matches: Match[] = [];
  const matcher = compiled.regex.matcher(text);
  let position = 0;
  while (position < text.length && matcher.find(position)) {
    const values: Record<string, string> = {};
    for (const group of compiled.groups) {
      const value = matcher.group(group);
      if (value !== null && value !== undefined) values[group] = value;
    }
    const start = matcher.start(OUTER);
    const end = matcher.end(OUTER);
    if (end > start)
      matches.push({ start, end, text: values[OUTER]!, url: compiled.expand(values) });
    // The character after a match may begin the next one (as in "#1,#2").
    const next = matcher.end() - (values[AFTER]?.length ?? 0);
    position = next > position ? next : position + 1;
  }
  return matches;
}

// One markdown-it instance for URL handling outside a render: normalizeLink percent-encodes
// what a browser would otherwise strip or reinterpret (tabs, controls, spaces), and
// validateLink then refuses javascript:, vbscript:, file: and data: URLs.
const urls = new MarkdownIt();

/** A linkifier's expansion as a safe href, or null. */
function safeUrl(url: string): string | null {
  const href = urls.normalizeLink(url);
  return urls.validateLink(href) ? href : null;
}

// ---- validation (POST/PATCH /realm/filters) ----

// re2js reports Go's wording; Zulip shows RE2's (C++) wording after "Bad regular expression: ".
const RE2_WORDING: Record<string, string> = {
  'missing closing )': 'missing )',
  'missing closing ]': 'missing ]',
  'invalid nested repetition operator': 'bad repetition operator',
  'missing argument to repetition operator': 'no argument for repetition operator',
  'invalid repeat count': 'bad repetition operator',
  'invalid character class range': 'bad character class range',
  'invalid character class': 'bad character class',
  'invalid named capture': 'invalid named capture group',
  'invalid or unsupported Perl syntax': 'invalid perl operator',
  'trailing backslash at end of expression': 'trailing \\',
};

/** The pattern's named groups, or the error message Zulip gives for a bad pattern. */
export function checkLinkifierPattern(pattern: string): { groups: string[] } | { error: string } {
  if (pattern === '') return { error: 'This field cannot be blank.' };
  try {
    const groups = Object.keys(RE2JS.compile(pattern).namedGroups());
    RE2JS.compile(wrap(pattern));
    return { groups };
  } catch (error) {
    if (!(error instanceof RE2JSSyntaxException)) return { error: 'Bad regular expression' };
    const description = error.getDescription();
    return {
      error: `Bad regular expression: ${RE2_WORDING[description] ?? description}: ${error.getPattern() ?? ''}`,
    };
  }
}

/** The variables of an RFC 6570 template, or null if it is not one (white space and control
 * characters are never part of one). */
export function templateVariables(template: string): Set<string> | null {
  if (/[\s\p{Cc}]/u.test(template)) return null;
  try {
    const names = new Set<string>();
    for (const part of parseTemplate(template).ast.parts)
      if (part.type === 'expression')
        for (const variable of part.variables) names.add(variable.name);
    return names;
  } catch {
    return null;
  }
}

/** Zulip's RealmFilter.full_clean: what is wrong with a linkifier as Django's message_dict —
 * a field's own errors under its name (blank, an invalid template), then the model's checks
 * under `__all__` (the regular expression, groups the template and pattern do not share) — or
 * null. Django runs the model's checks even when a field failed, on the text as given. */
export function linkifierErrors(
  pattern: string,
  urlTemplate: string,
): Record<string, string[]> | null {
  const errors: Record<string, string[]> = {};
  if (pattern === '') errors.pattern = ['This field cannot be blank.'];
  // A blank template skips its field's validator and has no variables.
  const variables = urlTemplate === '' ? new Set<string>() : templateVariables(urlTemplate);
  if (urlTemplate === '') errors.url_template = ['This field cannot be blank.'];
  else if (variables === null) errors.url_template = ['Invalid URL template.'];
  const problem = modelProblem(pattern, variables);
  if (problem) errors.__all__ = [problem];
  return Object.keys(errors).length > 0 ? errors : null;
}

/** RealmFilter.clean: the pattern must compile, and its named groups and the template's
 * variables must be the same (not checked when the template is invalid). */
function modelProblem(pattern: string, variables: Set<string> | null): string | null {
  const checked = pattern === '' ? { groups: [] } : checkLinkifierPattern(pattern);
  if ('error' in checked) return checked.error;
  if (variables === null) return null;
  const groups = new Set(checked.groups);
  const missingInPattern = [...variables].filter((name) => !groups.has(name)).sort();
  if (missingInPattern.length > 0)
    return `Group '${missingInPattern[0]}' in URL template is not present in linkifier pattern.`;
  const missingInTemplate = [...groups].filter((name) => !variables.has(name)).sort();
  if (missingInTemplate.length > 0)
    return `Group '${missingInTemplate[0]}' in linkifier pattern is not present in URL template.`;
  return null;
}

/** The named groups of `pattern` when it matches the whole of `input`, else null. */
export function matchWhole(pattern: string, input: string): Record<string, string> | null {
  try {
    const regex = RE2JS.compile(`(?:${pattern})`);
    const matcher = regex.matcher(input);
    if (!matcher.matches()) return null;
    const values: Record<string, string> = {};
    for (const group of Object.keys(regex.namedGroups())) {
      const value = matcher.group(group);
      if (value !== null && value !== undefined) values[group] = value;
    }
    return values;
  } catch {
    return null;
  }
}

/** Fills a reverse template: `{name}` takes a group's value, `{{` and `}}` are literal braces.
 * Null when it names a variable `values` lacks or has an unbalanced brace. */
export function fillReverseTemplate(
  template: string,
  values: Record<string, string>,
): string | null {
  let output = '';
  for (let i = 0; i < template.length; i += 1) {
    const char = template[i]!;
    if ((char === '{' || char === '}') && template[i + 1] === char) {
      output += char;
      i += 1;
    } else if (char === '{') {
      const close = template.indexOf('}', i);
      if (close === -1) return null;
      const name = template.slice(i + 1, close);
      if (!Object.hasOwn(values, name)) return null;
      output += values[name];
      i = close;
    } else if (char === '}') return null;
    else output += char;
  }
  return output;
}

// ---- message rendering ----

function linkifierRule(state: StateCore): void {
  const linkifiers = (state.env as { mentionData?: { linkifiers?: readonly Linkifier[] } })
    .mentionData?.linkifiers;
  if (!linkifiers || linkifiers.length === 0) return;
  const compiled = linkifiers.map(compile).filter((c): c is Compiled => c !== null);
  rewriteTextOutsideLinks(state, (text) => linkifyText(state, text, compiled));
}

type Piece = { text: string } | { text: string; url: string };

/** Each linkifier in order takes its matches from the text earlier ones left unlinked. */
/** The text with each linkifier's matches as links, or null when nothing matched. */
function linkifyText(state: StateCore, text: string, all: Compiled[]): Token[] | null {
  let pieces: Piece[] = [{ text }];
  for (const compiled of all) {
    const next: Piece[] = [];
    for (const piece of pieces) {
      if ('url' in piece) {
        next.push(piece);
        continue;
      }
      let last = 0;
      for (const match of findMatches(piece.text, compiled)) {
        const url = safeUrl(match.url);
        if (url === null) continue;
        if (match.start > last) next.push({ text: piece.text.slice(last, match.start) });
        next.push({ text: match.text, url });
        last = match.end;
      }
      if (last < piece.text.length) next.push({ text: piece.text.slice(last) });
    }
    pieces = next;
  }
  if (pieces.length === 1 && !('url' in pieces[0]!)) return null;
  return pieces.flatMap((piece) => {
    const content = new state.Token('text', '', 0);
    content.content = piece.text;
    if (!('url' in piece)) return [content];
    const open = new state.Token('link_open', 'a', 1);
    open.attrs = [['href', piece.url]];
    return [open, content, new state.Token('link_close', 'a', -1)];
  });
}

export function linkifierPlugin(md: Md): void {
  // Before emoji: the text of a linkified match stays as typed.
  md.core.ruler.before('zulip_emoji', 'zulip_linkifiers', linkifierRule);
}

// ---- topic_links ----

// markdown-it's own URL finder (linkify-it), as for autolinks in message text.
const linkify = new MarkdownIt().linkify.set({ fuzzyLink: true, fuzzyEmail: false });
// Zulip splits a topic at these characters before looking for plain URLs in each piece.
const URL_SPLITTER = /[ !;),'"]/g;

/** Zulip's topic_links: linkifier matches (earlier linkifiers win overlaps) and plain URLs,
 * in the order they appear in the topic. */
export function topicLinks(topic: string, linkifiers: readonly Linkifier[]): TopicLink[] {
  if (topic === '') return [];
  const candidates: Match[] = [];
  for (const linkifier of linkifiers) {
    const compiled = compile(linkifier);
    if (!compiled) continue;
    for (const match of findMatches(topic, compiled)) {
      const url = safeUrl(match.url);
      if (url !== null) candidates.push({ ...match, url });
    }
  }
  let position = 0;
  for (const split of [...topic.matchAll(URL_SPLITTER), null]) {
    const end = split ? split.index : topic.length;
    // A URL counts only at the start of its piece (matchAtStart ignores scheme-less ones).
    const found = linkify.match(topic.slice(position, end))?.find((m) => m.index === 0);
    if (found) {
      const url = found.schema === '' ? `https://${found.raw}` : found.raw;
      candidates.push({ start: position, end: position + found.raw.length, text: found.raw, url });
    }
    position = end + 1;
  }
  const applied: Match[] = [];
  for (const candidate of candidates)
    if (applied.every((old) => candidate.end <= old.start || candidate.start >= old.end))
      applied.push(candidate);
  return applied.sort((a, b) => a.start - b.start).map(({ text, url }) => ({ text, url }));
}
