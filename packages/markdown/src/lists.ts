// Zulip's lists: Python-Markdown's "sane lists" with a 2-space indent, in place of CommonMark's.
// - An item's content, and so a sub-list, is indented 2 columns from the list, whatever the
//   marker's width: "1. B\n  1. C" nests C under B. An item line may be indented by 1 column.
// - Only `*`, `-`, `+` and `1.` markers; the bullets are interchangeable within one list.
// - A numbered list starts at its first number (`start` as typed); later numbers are ignored.
// - A list never interrupts a paragraph (hanging-lists.ts puts a blank line there first), but
//   inside a list item a marker line always starts the next item or a sub-list.
// - Looseness is per item, as Python-Markdown builds it: an item's paragraphs show as <p> when
//   a blank line separates it from the item before or after it, or splits its own content.
// - The first paragraph of an item keeps the indentation of its continuation lines, as Zulip
//   appends them to the item's text as typed.
import type { MarkdownIt, StateBlock, Token } from 'markdown-it';
import { hangingListsPlugin } from './hanging-lists';

/** Columns an item's content is indented from its list (Zulip's tab length for lists). */
const ITEM_INDENT = 2;

const MARKER = /^(?:([*+-])|(\d+)\.)[ \t]+/;

interface Marker {
  ordered: boolean;
  /** The number as typed, for ordered items. */
  number: string;
  markup: string;
  contentStart: number;
}

function readMarker(state: StateBlock, line: number): Marker | null {
  const start = state.bMarks[line]! + state.tShift[line]!;
  const match = MARKER.exec(state.src.slice(start, state.eMarks[line]));
  if (!match) return null;
  return {
    ordered: match[2] !== undefined,
    number: match[2] ?? '',
    markup: match[1] ?? '.',
    contentStart: start + match[0].length,
  };
}

interface OpenItem {
  /** The indent of the item's list. */
  base: number;
  /** The item's marker line. */
  firstLine: number;
}

const openItems = new WeakMap<StateBlock, OpenItem[]>();

function itemStack(state: StateBlock): OpenItem[] {
  let stack = openItems.get(state);
  if (!stack) {
    stack = [];
    openItems.set(state, stack);
  }
  return stack;
}

/** For a paragraph starting on an item's marker line, the indent to strip from its
 * continuation lines (that of the item's list, not of its content); otherwise undefined. */
export function itemTextIndent(state: StateBlock, line: number): number | undefined {
  const stack = openItems.get(state);
  const item = stack?.[stack.length - 1];
  return item?.firstLine === line ? item.base : undefined;
}

interface ItemSpan {
  open: number;
  close: number;
  blankInside: boolean;
  blankAfter: boolean;
}

function hideParagraphs(tokens: Token[], item: ItemSpan): void {
  const level = tokens[item.open]!.level + 1;
  for (let index = item.open + 1; index < item.close; index += 1) {
    const token = tokens[index]!;
    if (token.level !== level) continue;
    if (token.type === 'paragraph_open' || token.type === 'paragraph_close') token.hidden = true;
  }
}

function nextItem(
  state: StateBlock,
  line: number,
  endLine: number,
  base: number,
  ordered: boolean,
): Marker | null {
  if (line >= endLine) return null;
  const depth = state.sCount[line]! - base;
  if (depth < 0 || depth > 1) return null;
  const terminators = state.md.block.ruler.getRules('list');
  if (terminators.some((rule) => rule(state, line, endLine, true))) return null;
  const marker = readMarker(state, line);
  return marker?.ordered === ordered ? marker : null;
}

/** Parses one item's content with the item's indent, restoring the state afterwards. */
function parseItem(state: StateBlock, line: number, endLine: number, marker: Marker, base: number) {
  const saved = {
    tShift: state.tShift[line]!,
    sCount: state.sCount[line]!,
    blkIndent: state.blkIndent,
    tight: state.tight,
  };
  state.tShift[line] = marker.contentStart - state.bMarks[line]!;
  state.sCount[line] = base + ITEM_INDENT;
  state.blkIndent = base + ITEM_INDENT;
  state.tight = true;
  const stack = itemStack(state);
  stack.push({ base, firstLine: line });
  state.md.block.tokenize(state, line, endLine);
  stack.pop();
  // markdown-it clears `tight` when a blank line separates two blocks of the content.
  const blankInside = !state.tight;
  state.tShift[line] = saved.tShift;
  state.sCount[line] = saved.sCount;
  state.blkIndent = saved.blkIndent;
  state.tight = saved.tight;
  return blankInside;
}

function listRule(state: StateBlock, startLine: number, endLine: number, silent: boolean) {
  const first = readMarker(state, startLine);
  if (!first) return false;
  const depth = state.sCount[startLine]! - state.blkIndent;
  if (silent) {
    // As a terminator: inside an item, a marker line at or left of the content ends the
    // paragraph; elsewhere paragraphs run on (the blank line Zulip needs was added before).
    if (state.parentType === 'paragraph' && itemStack(state).length === 0) return false;
    return depth <= 1;
  }
  if (depth < 0 || depth > 1) return false;

  const base = state.blkIndent;
  const tag = first.ordered ? 'ol' : 'ul';
  const listOpen = state.push(first.ordered ? 'ordered_list_open' : 'bullet_list_open', tag, 1);
  if (first.ordered && first.number !== '1') listOpen.attrs = [['start', first.number]];
  listOpen.markup = first.markup;
  const listLines: [number, number] = [startLine, startLine];
  listOpen.map = listLines;
  const oldParentType = state.parentType;
  state.parentType = 'list';

  const items: ItemSpan[] = [];
  let line = startLine;
  let marker: Marker | null = first;
  while (marker) {
    const itemOpen = state.push('list_item_open', 'li', 1);
    itemOpen.markup = marker.markup;
    if (marker.ordered) itemOpen.info = marker.number;
    const open = state.tokens.length - 1;
    const blankInside = parseItem(state, line, endLine, marker, base);
    state.push('list_item_close', 'li', -1).markup = marker.markup;
    const next = state.line;
    itemOpen.map = [line, next];
    items.push({
      open,
      close: state.tokens.length - 1,
      blankInside,
      blankAfter: next - line > 1 && state.isEmpty(next - 1),
    });
    line = next;
    marker = nextItem(state, line, endLine, base, first.ordered);
  }

  state.push(first.ordered ? 'ordered_list_close' : 'bullet_list_close', tag, -1).markup =
    first.markup;
  listLines[1] = line;
  state.line = line;
  state.parentType = oldParentType;
  items.forEach((item, index) => {
    const loose =
      item.blankInside ||
      (index > 0 && items[index - 1]!.blankAfter) ||
      (index < items.length - 1 && item.blankAfter);
    if (!loose) hideParagraphs(state.tokens, item);
  });
  return true;
}

export function listsPlugin(md: MarkdownIt): void {
  hangingListsPlugin(md);
  md.block.ruler.at('list', listRule, { alt: ['paragraph', 'reference', 'blockquote'] });
  // Zulip puts a tight item's sub-list (or other block) right after its text: "<li>a<ul>".
  const renderToken = md.renderer.renderToken.bind(md.renderer);
  md.renderer.renderToken = (tokens, index, options) => {
    const html = renderToken(tokens, index, options);
    const previous = tokens[index - 1];
    const afterItemText = previous?.hidden === true && previous.type === 'paragraph_close';
    return afterItemText && html.startsWith('\n') ? html.slice(1) : html;
  };
}
