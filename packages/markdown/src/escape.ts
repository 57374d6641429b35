/** Escapes text for double-quoted attribute values (and element content where Zulip escapes
 * quotes too). */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** Escapes element content as Python-Markdown's serializer does (_escape_cdata): only `&`, `<`
 * and `>`; quotes stay as typed. */
export function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
