// Zulip does not start a block quote that would be empty: when every remaining line of a block
// is a bare `>` (with nothing but whitespace after it), the lines are a paragraph of text. So
// ">" shows a ">", and ">>>" is a quote in a quote holding the text ">".
import type { MarkdownIt, StateBlock } from 'markdown-it';

function isBareQuoteLine(state: StateBlock, line: number): boolean {
  if (state.sCount[line]! - state.blkIndent > 3) return false;
  const start = state.bMarks[line]! + state.tShift[line]!;
  return /^>\s*$/.test(state.src.slice(start, state.eMarks[line]));
}

/** Where the run of bare `>` lines from `startLine` to the end of the block ends, or -1 when
 * some line of the block has more. */
export function emptyQuoteEnd(state: StateBlock, startLine: number, endLine: number): number {
  let end = startLine;
  while (end < endLine && !state.isEmpty(end)) {
    if (!isBareQuoteLine(state, end)) return -1;
    end += 1;
  }
  return end === startLine ? -1 : end;
}

function emptyQuoteRule(state: StateBlock, startLine: number, endLine: number): boolean {
  const end = emptyQuoteEnd(state, startLine, endLine);
  if (end === -1) return false;
  const lines: string[] = [];
  for (let line = startLine; line < end; line += 1) {
    lines.push(state.src.slice(state.bMarks[line]! + state.tShift[line]!, state.eMarks[line]));
  }
  state.line = end;
  const open = state.push('paragraph_open', 'p', 1);
  open.map = [startLine, end];
  const inline = state.push('inline', '', 0);
  inline.content = lines.join('\n');
  inline.map = [startLine, end];
  inline.children = [];
  state.push('paragraph_close', 'p', -1);
  return true;
}

const QUOTE_LINE = /^ {0,3}>/;
const MAX_LAZY_QUOTE_DEPTH = 16;
const FENCE_LINE = /^ {0,3}(?:`{3,}|~{3,})/;
/** A heading or a rule: Zulip's processors for them run before its quote processor and split
 * the block there, so the quote ends before such a line. */
const ENDS_QUOTE = /^ {0,3}(?:#{1,6}(?:\s|$)|(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$)/;

/** Python-Markdown's BlockQuoteProcessor: a quote takes every line of its block (up to a blank
 * line), with or without `>`, where CommonMark ends it at the first line that cannot continue
 * a paragraph (after a bare `>`, a heading, a list item). Such a block is rendered here: its
 * lines, less one `>` each, as Markdown of their own inside the quote. Blocks whose lines all
 * have `>`, with a fence in them (Zulip reads fences before quotes), with an unquoted heading
 * or rule (which end Zulip's quote), or inside a list item are left to markdown-it. */
function lazyQuoteRule(
  state: StateBlock,
  startLine: number,
  endLine: number,
  silent: boolean,
): boolean {
  const lineText = (line: number) => state.src.slice(state.bMarks[line]!, state.eMarks[line]);
  // Each level renders the next one afresh: deeper than this, markdown-it's own rule (and its
  // nesting limit) takes over.
  const depth = (state.env as { lazyQuoteDepth?: number }).lazyQuoteDepth ?? 0;
  if (depth >= MAX_LAZY_QUOTE_DEPTH || state.blkIndent > 0) return false;
  if (state.sCount[startLine]! - state.blkIndent > 3) return false;
  if (!QUOTE_LINE.test(lineText(startLine))) return false;
  let end = startLine;
  let unquoted = false;
  while (end < endLine && !state.isEmpty(end)) {
    const text = lineText(end);
    if (FENCE_LINE.test(text.replace(/^ {0,3}>\s?/, ''))) return false;
    if (!QUOTE_LINE.test(text)) {
      if (ENDS_QUOTE.test(text)) return false;
      unquoted = true;
    }
    end += 1;
  }
  if (!unquoted) return false;
  if (silent) return true;
  const inner: string[] = [];
  for (let line = startLine; line < end; line += 1)
    inner.push(lineText(line).replace(/^ {0,3}> ?/, ''));
  state.line = end;
  const token = state.push('html_block', '', 0);
  token.map = [startLine, end];
  token.content = `<blockquote>\n${state.md.render(inner.join('\n'), {
    ...(state.env as object),
    inBlockquote: true,
    lazyQuoteDepth: depth + 1,
  })}</blockquote>\n`;
  return true;
}

export function quotesPlugin(md: MarkdownIt): void {
  md.block.ruler.before('blockquote', 'zulip_empty_quote', emptyQuoteRule);
  md.block.ruler.before('blockquote', 'zulip_lazy_quote', lazyQuoteRule, {
    alt: ['paragraph', 'reference', 'blockquote', 'list'],
  });
}
