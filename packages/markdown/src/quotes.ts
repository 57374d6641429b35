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

export function quotesPlugin(md: MarkdownIt): void {
  md.block.ruler.before('blockquote', 'zulip_empty_quote', emptyQuoteRule);
}
