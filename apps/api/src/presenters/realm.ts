import { renderMarkdown } from '@parley/markdown';

/** HTML of an organization or channel description, or a Markdown profile value: Zulip's
 * Markdown without mentions (nobody is notified by a description). */
export function renderDescription(markdown: string): string {
  if (markdown.trim() === '') return '';
  return renderMarkdown(markdown).html;
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#x27;');
}
