// Paragraphs as Zulip builds them: the text is kept as typed except for the leading whitespace
// of the paragraph, so trailing spaces stay ("test  " renders "<p>test  </p>"), and in an item's
// first paragraph the continuation lines keep their indentation (see lists.ts). A `>` line that
// would only open an empty quote does not end a paragraph either (see quotes.ts).
import type { MarkdownIt, StateBlock } from 'markdown-it';
import { itemTextIndent } from './lists';
import { emptyQuoteEnd } from './quotes';

function paragraphRule(state: StateBlock, startLine: number, endLine: number): boolean {
  const terminators = state.md.block.ruler.getRules('paragraph');
  const oldParentType = state.parentType;
  state.parentType = 'paragraph';
  let nextLine = startLine + 1;
  for (; nextLine < endLine && !state.isEmpty(nextLine); nextLine += 1) {
    // Lines indented like code, and lazy lines of a block quote, only continue the paragraph.
    if (state.sCount[nextLine]! - state.blkIndent > 3) continue;
    if (state.sCount[nextLine]! < 0) continue;
    // A run of bare `>` lines to the end of the block continues it, all at once (checking
    // each line of the run again would be quadratic).
    const bareQuotesEnd = emptyQuoteEnd(state, nextLine, endLine);
    if (bareQuotesEnd !== -1) {
      nextLine = bareQuotesEnd - 1;
      continue;
    }
    if (terminators.some((rule) => rule(state, nextLine, endLine, true))) break;
  }

  // The first line from its first character: in a list item, the marker before it is not text.
  let content = state.src.slice(
    state.bMarks[startLine]! + state.tShift[startLine]!,
    state.eMarks[startLine],
  );
  if (nextLine > startLine + 1) {
    const indent = itemTextIndent(state, startLine) ?? state.blkIndent;
    content += `\n${state.getLines(startLine + 1, nextLine, indent, false)}`;
  }
  state.line = nextLine;

  const open = state.push('paragraph_open', 'p', 1);
  open.map = [startLine, nextLine];
  const inline = state.push('inline', '', 0);
  inline.content = content.replace(/^\s+/, '');
  inline.map = [startLine, nextLine];
  inline.children = [];
  state.push('paragraph_close', 'p', -1);
  state.parentType = oldParentType;
  return true;
}

export function paragraphsPlugin(md: MarkdownIt): void {
  md.block.ruler.at('paragraph', paragraphRule);
}
