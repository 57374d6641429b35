// Zulip's "hanging lists" preprocessor. Zulip's lists never interrupt a paragraph; instead,
// before parsing, a blank line is put between a line of text and a list line right after it,
// and between a bulleted and a numbered list line. So "Fruit:\n* apple" is a paragraph and a
// list, and text typed under a list item followed by another item splits the list into loose
// items, as in Zulip. Lines inside code, math and spoiler fences are left alone.
import type { MarkdownIt, StateCore } from 'markdown-it';
import { parseFenceLine } from './fences';

/** A line Zulip takes for a list item here: any indentation, a bullet or one digit and a dot. */
const LIST_LINE = /^[ ]*([*+-]|\d\.)[ ]+/;

interface OpenFence {
  fence: string;
  isCode: boolean;
}

export function separateHangingLists(src: string): string {
  const lines = src.split('\n');
  const output: string[] = [];
  const open: OpenFence[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i]!;
    output.push(line);
    // Zulip's own bookkeeping: a fence line with no language closes the innermost fence of
    // the same kind; any other fence line opens one. Only quote fences hold lists.
    const fence = parseFenceLine(line);
    if (fence && fence.lang === undefined && open[open.length - 1]?.fence === fence.fence) {
      open.pop();
    } else if (fence) {
      const isCode = fence.lang !== 'quote' && fence.lang !== 'quoted';
      open.push({ fence: fence.fence, isCode });
    }
    const next = lines[i + 1];
    if (next === undefined || line === '' || open.some((f) => f.isCode)) continue;
    const here = LIST_LINE.exec(line);
    const after = LIST_LINE.exec(next);
    if (!after) continue;
    if (!here || (here[1]!.length === 1) !== (after[1]!.length === 1)) output.push('');
  }
  return output.join('\n');
}

export function hangingListsPlugin(md: MarkdownIt): void {
  md.core.ruler.after('normalize', 'zulip_hanging_lists', (state: StateCore) => {
    if (!state.inlineMode) state.src = separateHangingLists(state.src);
  });
}
