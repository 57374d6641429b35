// Where Zulip links a bare URL: only at the start of the text or after whitespace or one of
// ' " ( , : <, and only when what follows is whitespace or the end, possibly after closing
// punctuation. So "src=http://x.y/a.js" or "**http://x.y**" stay text, while
// "(see http://x.y)." is linked. Runs once after inline parsing (before Zulip's image previews
// are added) and again after markdown-it's linkify for the links that adds; a URL left as text
// is marked text_special so linkify does not take it again.
import type { MarkdownIt, StateCore, Token } from 'markdown-it';

const BEFORE = /[\s'"(,:<]$/;
const CLOSING_PUNCTUATION = /^[!:;?),.'">]*/;
const BREAKS = new Set(['softbreak', 'hardbreak']);

function isTextToken(token: Token): boolean {
  return token.type === 'text' || token.type === 'text_special';
}

function startsWell(children: Token[], linkOpen: number): boolean {
  for (let index = linkOpen - 1; index >= 0; index -= 1) {
    const token = children[index]!;
    if (BREAKS.has(token.type)) return true;
    // Any other token ends in markup (`*`, `` ` ``, `)`, …) that Zulip does not link after.
    if (!isTextToken(token)) return false;
    if (token.content !== '') return BEFORE.test(token.content);
  }
  return true;
}

function endsWell(children: Token[], linkClose: number): boolean {
  for (let index = linkClose + 1; index < children.length; index += 1) {
    const token = children[index]!;
    if (BREAKS.has(token.type)) return true;
    if (!isTextToken(token)) return false;
    const rest = token.content.slice(CLOSING_PUNCTUATION.exec(token.content)![0].length);
    if (rest !== '') return /^\s/.test(rest);
  }
  return true;
}

/** Links already judged, so the second run does not judge them beside their previews. */
const judged = new WeakSet<Token>();

function bareLinkBoundsRule(state: StateCore): void {
  for (const block of state.tokens) {
    const children = block.children;
    if (block.type !== 'inline' || !children) continue;
    for (let index = 0; index < children.length; index += 1) {
      const open = children[index]!;
      if (open.type !== 'link_open' || open.markup !== 'linkify' || judged.has(open)) continue;
      judged.add(open);
      const close = children.findIndex((t, k) => k > index && t.type === 'link_close');
      if (startsWell(children, index) && endsWell(children, close)) continue;
      const text = new state.Token('text_special', '', 0);
      text.content = children
        .slice(index + 1, close)
        .map((t) => t.content)
        .join('');
      children.splice(index, close - index + 1, text);
    }
  }
}

export function bareLinksPlugin(md: MarkdownIt): void {
  md.core.ruler.after('inline', 'zulip_bare_link_bounds', bareLinkBoundsRule);
  md.core.ruler.after('linkify', 'zulip_fuzzy_link_bounds', bareLinkBoundsRule);
}
