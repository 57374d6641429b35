// content_html_diff of the edit-history endpoint: the new rendering with inserted words in
// <span class="highlight_text_inserted"> and removed words in
// <span class="highlight_text_deleted">, as Zulip's highlight_html_differences does. Tags
// are never split: only text between them is compared, word by word.
import { diffArrays } from 'diff';

const TOKEN = /<[^>]*>|[^<\s]+|\s+/g;

/** Bounds the diff's work: a request must not hold the event loop. */
const DIFF_TIMEOUT_MS = 50;

export function htmlDiff(before: string, after: string): string {
  const oldTokens = before.match(TOKEN) ?? [];
  const newTokens = after.match(TOKEN) ?? [];
  // Past the time limit the whole old text counts as deleted and the new as inserted.
  const parts = diffArrays(oldTokens, newTokens, { timeout: DIFF_TIMEOUT_MS }) ?? [
    { value: oldTokens, removed: true, added: false, count: oldTokens.length },
    { value: newTokens, added: true, removed: false, count: newTokens.length },
  ];
  let html = '';
  for (const part of parts) {
    if (!part.added && !part.removed) {
      html += part.value.join('');
      continue;
    }
    const kind = part.added ? 'inserted' : 'deleted';
    let run = '';
    const flush = () => {
      if (run.trim() !== '') html += `<span class="highlight_text_${kind}">${run}</span>`;
      else html += part.added ? run : '';
      run = '';
    };
    for (const token of part.value) {
      if (token.startsWith('<')) {
        flush();
        // Removed markup is dropped; the new markup stays, so the result is well formed.
        if (part.added) html += token;
      } else {
        run += token;
      }
    }
    flush();
  }
  return html;
}
