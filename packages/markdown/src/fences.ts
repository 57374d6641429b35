// Zulip's fence syntax, which is stricter than CommonMark's. Zulip finds fences in the raw
// message lines before any other parsing, so a fence must start at the very beginning of a line
// (not indented, not after `>`), its info string may not contain ~ or `, and only the exact
// opening fence closes it (a longer run of backticks is content). Quote and spoiler fences hold
// Markdown, so fences nested inside them are skipped over as a whole.
import type { StateBlock } from 'markdown-it';
import { defaultFenceLanguage, inSpoiler } from './render-options';

/** A fence line: the fence, then an optional language ("py", ".py", "{.py}") and header. */
const FENCE = /^(~{3,}|`{3,})[ ]*(?:\{?\.?([a-zA-Z0-9_+,\-./#]+)[ ]*([^ ~`][^~`]*)?\}?)?$/;

export interface FenceLine {
  fence: string;
  /** As typed; undefined when the fence has no language. */
  lang: string | undefined;
  header: string;
}

export function parseFenceLine(line: string): FenceLine | null {
  const match = FENCE.exec(line);
  if (!match) return null;
  return { fence: match[1]!, lang: match[2], header: match[3] ?? '' };
}

/** Fences whose content is Markdown, so fences inside them nest. */
export function holdsMarkdown(lang: string | undefined): boolean {
  const kind = lang?.toLowerCase();
  return kind === 'quote' || kind === 'quoted' || kind === 'spoiler';
}

function rawLine(state: StateBlock, line: number): string {
  return state.src.slice(state.bMarks[line], state.eMarks[line]);
}

interface OpenFence {
  fence: string;
  /** Its content is Markdown, so fences inside it open and close. */
  nests: boolean;
  /** Inside a spoiler, bare fences take no default language (Zulip's SpoilerHandler). */
  inSpoiler: boolean;
}

function openFence(line: FenceLine, lang: string | undefined, inSpoiler: boolean): OpenFence {
  return {
    fence: line.fence,
    nests: holdsMarkdown(lang),
    inSpoiler: inSpoiler || lang?.toLowerCase() === 'spoiler',
  };
}

/** The line that closes the fence opened at `startLine`, or `endLine` if nothing does. */
function closingLine(
  state: StateBlock,
  opening: OpenFence,
  defaultLang: string | undefined,
  startLine: number,
  endLine: number,
) {
  const open = [opening];
  for (let line = startLine + 1; line < endLine; line += 1) {
    const text = rawLine(state, line);
    const innermost = open[open.length - 1]!;
    if (text.trimEnd() === innermost.fence) {
      open.pop();
      if (open.length === 0) return line;
    } else if (innermost.nests) {
      const nested = parseFenceLine(text);
      if (nested) {
        const lang = nested.lang ?? (innermost.inSpoiler ? undefined : defaultLang);
        open.push(openFence(nested, lang, innermost.inSpoiler));
      }
    }
  }
  return endLine;
}

/** Block rule replacing markdown-it's `fence`. The token's info is the lowercased language
 * and its meta.header the rest of the fence line. */
export function fenceRule(
  state: StateBlock,
  startLine: number,
  endLine: number,
  silent: boolean,
): boolean {
  const start = state.bMarks[startLine]! + state.tShift[startLine]!;
  if (start > 0 && state.src.charCodeAt(start - 1) !== 0x0a /* \n */) return false;
  const opening = parseFenceLine(state.src.slice(start, state.eMarks[startLine]));
  if (!opening) return false;
  if (silent) return true;

  const defaultLang = defaultFenceLanguage(state.env);
  const lang = opening.lang ?? defaultLang;
  const open = openFence(opening, lang, inSpoiler(state.env));
  const close = closingLine(state, open, defaultLang, startLine, endLine);
  state.line = Math.min(close + 1, endLine);
  // Zulip renders nothing at all for a fence without content lines.
  if (close === startLine + 1) return true;
  const lines: string[] = [];
  for (let line = startLine + 1; line < close; line += 1) lines.push(rawLine(state, line));
  const token = state.push('fence', 'code', 0);
  token.info = lang?.toLowerCase() ?? '';
  token.meta = { header: opening.header };
  token.markup = opening.fence;
  token.content = `${lines.join('\n')}\n`;
  token.map = [startLine, state.line];
  return true;
}
