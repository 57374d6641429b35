// Zulip's block syntax on top of markdown-it: code blocks in Zulip's codehilite wrapper (with
// the language's display name), and the special fences ```quote, ```spoiler <header> and
// ```math. Fences are found by Zulip's own rule (fences.ts) and rendered from their raw
// content, so quotes and spoilers render their inside as Markdown of their own.
import type { MarkdownIt, Token } from 'markdown-it';
import { fenceRule } from './fences';
import { renderMathParagraphs } from './math';
import { spoilerEnv } from './render-options';
import { escapeHtml as escape, escapeText } from './escape';
import generatedLanguages from './generated/code-language-names.json';

/** Pygments' lexer names by alias (scripts/generate-language-names.py): Zulip shows the name of
 * the lexer a fence's language finds, or the language as typed when none does. */
const LANGUAGE_NAMES: Record<string, string> = generatedLanguages.names;

/** Zulip's codehilite wrapper; trailing whitespace of each line and blank lines at either end
 * are dropped (Pygments trims the code it is given). Pygments escapes quotes too (`&quot;`,
 * `&#39;`); a block with a language goes through lxml again in Zulip's format_code, which
 * writes them back as typed. */
export function codeBlock(code: string, language: string): string {
  const body = code
    .split('\n')
    .map((line) => line.replace(/\s+$/, ''))
    .join('\n')
    .replace(/^\n+/, '')
    .replace(/\n*$/, '\n');
  const key = language.toLowerCase();
  // Own keys only: "constructor" is a language as typed, not Object's.
  const name =
    language === '' ? '' : Object.hasOwn(LANGUAGE_NAMES, key) ? LANGUAGE_NAMES[key]! : language;
  const attribute = name === '' ? '' : ` data-code-language="${escape(name)}"`;
  const content = name === '' ? escape(body).replace(/'/g, '&#39;') : escapeText(body);
  return `<div class="codehilite"${attribute}><pre><span></span><code>${content}</code></pre></div>\n`;
}

// Quote and spoiler fences render their content as a whole message; a few thousand nested
// ones would each parse the rest again. Deeper than this, the content shows as typed.
const MAX_NESTED_FENCES = 16;

export function blocksPlugin(md: MarkdownIt): void {
  md.block.ruler.at('fence', fenceRule, { alt: ['paragraph', 'reference', 'blockquote', 'list'] });
  md.renderer.rules.fence = (tokens, index, _options, env) => {
    const token = tokens[index]!;
    const language = token.info;
    const depth = (env as { fenceDepth?: number }).fenceDepth ?? 0;
    const nested = (content: string, kind: 'quote' | 'spoiler') =>
      depth >= MAX_NESTED_FENCES
        ? codeBlock(content, '')
        : md.render(
            content,
            kind === 'quote'
              ? { ...env, fenceDepth: depth + 1, inBlockquote: true }
              : spoilerEnv({ ...env, fenceDepth: depth + 1 }),
          );
    switch (language) {
      case 'quote':
      case 'quoted':
        // A blockquote: no link previews inside (see inline-extras.ts).
        return `<blockquote>\n${nested(token.content, 'quote')}</blockquote>\n`;
      case 'spoiler': {
        const header = (token.meta as { header: string }).header;
        const headerHtml = header === '' ? '' : nested(header, 'spoiler');
        return (
          `<div class="spoiler-block"><div class="spoiler-header">\n${headerHtml}` +
          `</div><div class="spoiler-content" aria-hidden="true">\n${nested(token.content, 'spoiler')}` +
          `</div></div>\n`
        );
      }
      case 'math':
        return `<p>${renderMathParagraphs(token.content)}</p>\n`;
      default:
        return codeBlock(token.content, language);
    }
  };
  md.renderer.rules.code_block = (tokens: Token[], index: number) =>
    codeBlock(tokens[index]!.content, '');
}
