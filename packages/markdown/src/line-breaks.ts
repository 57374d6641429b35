// Zulip's inline handling of line ends. Every newline is a <br> (nl2br), and because Zulip
// substitutes the newline character alone, the spaces around it stay: trailing spaces are not a
// "hard break" and a continuation line keeps its indentation. Zulip's emphasis, strong and
// strikethrough patterns do not match across a newline, so delimiters on different lines stay
// text.
import type { Delimiter, MarkdownIt, StateInline } from 'markdown-it';

function newlineRule(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x0a /* \n */) return false;
  if (!silent) state.push('softbreak', 'br', 0);
  state.pos += 1;
  return true;
}

const BREAKS = new Set(['softbreak', 'hardbreak']);

function unpairAcrossLines(state: StateInline, delimiters: Delimiter[]): void {
  for (const opener of delimiters) {
    if (opener.end < 0) continue;
    const closer = delimiters[opener.end]!;
    for (let index = opener.token + 1; index < closer.token; index += 1) {
      if (BREAKS.has(state.tokens[index]!.type)) {
        opener.end = -1;
        break;
      }
    }
  }
}

/** Runs after markdown-it pairs the delimiters and before emphasis and strikethrough turn pairs
 * into tags; an opener without a pair is left as text. */
function oneLineDelimiters(state: StateInline): boolean {
  unpairAcrossLines(state, state.delimiters);
  for (const meta of state.tokens_meta) {
    if (meta?.delimiters) unpairAcrossLines(state, meta.delimiters);
  }
  return false;
}

/** Zulip's ~~strikethrough~~ needs exactly two tildes on each side; a longer run is text. */
function tildeRunRule(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x7e /* ~ */) return false;
  let end = state.pos;
  while (state.src.charCodeAt(end) === 0x7e) end += 1;
  if (end - state.pos < 3) return false;
  if (!silent) state.pending += state.src.slice(state.pos, end);
  state.pos = end;
  return true;
}

export function lineBreaksPlugin(md: MarkdownIt): void {
  md.inline.ruler.at('newline', newlineRule);
  md.inline.ruler.before('strikethrough', 'zulip_tilde_run', tildeRunRule);
  md.inline.ruler2.after('balance_pairs', 'zulip_one_line_delimiters', oneLineDelimiters);
}
