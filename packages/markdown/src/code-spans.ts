// Zulip's `code spans`: the text between two equal runs of backticks, kept exactly as typed.
// Unlike CommonMark, Zulip strips no padding spaces and keeps newlines, so "`` `x` ``" shows
// its spaces and a span may run over a line break.
import type { MarkdownIt, StateInline } from 'markdown-it';

/** For each run length, where the last run of backticks of that length starts. */
function lastRuns(src: string): Record<number, number> {
  const runs: Record<number, number> = {};
  let pos = 0;
  while ((pos = src.indexOf('`', pos)) !== -1) {
    const start = pos;
    while (src.charCodeAt(pos) === 0x60) pos += 1;
    runs[pos - start] = start;
  }
  return runs;
}

function codeSpanRule(state: StateInline, silent: boolean): boolean {
  const start = state.pos;
  if (state.src.charCodeAt(start) !== 0x60 /* ` */) return false;
  const max = state.posMax;
  let pos = start + 1;
  while (pos < max && state.src.charCodeAt(pos) === 0x60) pos += 1;
  const marker = state.src.slice(start, pos);

  // Knowing where the last run of each length is keeps unmatched openers from rescanning.
  if (!state.backticksScanned) {
    state.backticks = lastRuns(state.src);
    state.backticksScanned = true;
  }
  if ((state.backticks[marker.length] ?? -1) >= pos) {
    let runEnd = pos;
    let runStart: number;
    while ((runStart = state.src.indexOf('`', runEnd)) !== -1 && runStart < max) {
      runEnd = runStart + 1;
      while (state.src.charCodeAt(runEnd) === 0x60) runEnd += 1;
      if (runEnd > max) break;
      if (runEnd - runStart === marker.length) {
        if (!silent) {
          const token = state.push('code_inline', 'code', 0);
          token.markup = marker;
          token.content = state.src.slice(pos, runStart);
        }
        state.pos = runEnd;
        return true;
      }
    }
  }
  if (!silent) state.pending += marker;
  state.pos = pos;
  return true;
}

export function codeSpansPlugin(md: MarkdownIt): void {
  md.inline.ruler.at('backticks', codeSpanRule);
}
