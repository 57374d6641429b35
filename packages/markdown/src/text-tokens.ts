// Core rules that rewrite plain text after inline parsing (linkifiers, emoji) skip code, HTML
// and the text of links; this is that walk, in one place.
import type { StateCore, Token } from 'markdown-it';

/** Replaces each text token outside links with what `replace` returns (null keeps it). */
export function rewriteTextOutsideLinks(
  state: StateCore,
  replace: (text: string) => Token[] | null,
): void {
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    const children: Token[] = [];
    let insideLink = 0;
    for (const child of block.children) {
      if (child.type === 'link_open') insideLink += 1;
      if (child.type === 'link_close') insideLink -= 1;
      const replacement = child.type === 'text' && insideLink === 0 ? replace(child.content) : null;
      children.push(...(replacement ?? [child]));
    }
    block.children = children;
  }
}
