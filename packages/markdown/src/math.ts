// Zulip's TeX: inline $$…$$ and ```math fences, typeset with KaTeX. Input KaTeX cannot parse
// is shown as typed, escaped, in a tex-error span.
import katex from 'katex';
import type { MarkdownIt, StateInline } from 'markdown-it';
import { escapeHtml as escape, escapeText } from './escape';

export function renderMath(tex: string, display: boolean): string {
  try {
    return katex.renderToString(tex, { displayMode: display, throwOnError: true });
  } catch {
    // Zulip's fenced_code format_tex escapes with Django's escape (quotes too); an inline
    // formula's error is element text, escaped as all text is (quotes kept).
    const shown = display ? escape(tex).replace(/'/g, '&#x27;') : escapeText(`$$${tex}$$`);
    return `<span class="tex-error">${shown}</span>`;
  }
}

/** Zulip's inline pattern: $$ not next to another $, a body that does not start with _ or $,
 * no newline inside, escaped \$ allowed. */
const INLINE = /^\$\$([^\n_$](?:\\\$|[^$\n])*)\$\$(?!\$)/;

export function mathPlugin(md: MarkdownIt): void {
  md.inline.ruler.before('escape', 'zulip_tex', (state: StateInline, silent: boolean) => {
    if (state.src.charCodeAt(state.pos) !== 0x24 /* $ */) return false;
    if (state.pos > 0 && state.src.charCodeAt(state.pos - 1) === 0x24) return false;
    const match = INLINE.exec(state.src.slice(state.pos));
    if (!match) return false;
    if (!silent) {
      const token = state.push('html_inline', '', 0);
      token.content = renderMath(match[1]!, false);
    }
    state.pos += match[0].length;
    return true;
  });
}

/** A ```math fence's content: like Zulip, each blank-line-separated part is typeset as its own
 * display formula, from the lines as typed less their trailing whitespace. */
export function renderMathParagraphs(content: string): string {
  const text = content
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
  return text
    .split('\n\n')
    .map((part) => renderMath(part, true))
    .join('\n\n');
}
