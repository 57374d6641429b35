// Zulip's rewrite_local_links_to_relative: a link to the organization's own narrows or uploads
// becomes relative, so clients open it in place instead of in a new window. The link's text
// stays as typed.
import type { MarkdownIt, StateCore, Token } from 'markdown-it';
import { renderOptions } from './render-options';

function rewriteLinks(tokens: Token[], prefix: string): void {
  for (const token of tokens) {
    if (token.children) rewriteLinks(token.children, prefix);
    if (token.type !== 'link_open') continue;
    const href = String(token.attrGet('href') ?? '');
    if (href.startsWith(`${prefix}#`) || href.startsWith(`${prefix}user_uploads/`))
      token.attrSet('href', href.slice(prefix.length));
  }
}

function localLinksRule(state: StateCore): void {
  const realmUrl = renderOptions(state.env).realmUrl;
  if (realmUrl) rewriteLinks(state.tokens, `${realmUrl}/`);
}

export function localLinksPlugin(md: MarkdownIt): void {
  // Before previews are chosen (an upload linked by its full URL is previewed as an upload),
  // and again after markdown-it's linkify has added the links it finds last.
  md.core.ruler.before('zulip_links', 'zulip_local_links', localLinksRule);
  md.core.ruler.after('linkify', 'zulip_local_links_linkified', localLinksRule);
}
