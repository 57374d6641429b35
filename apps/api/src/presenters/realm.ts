/** HTML for an organization description until the Markdown renderer lands (issue
 * "Zulip-flavoured Markdown rendering"): paragraphs of escaped text, never raw HTML. */
export function renderPlainDescription(markdown: string): string {
  if (markdown.trim() === '') return '';
  return markdown
    .split(/\n{2,}/)
    .map((paragraph) => `<p>${escapeHtml(paragraph).replace(/\n/g, '<br>\n')}</p>`)
    .join('\n');
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#x27;');
}
