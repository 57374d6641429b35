// Text measures shared by validators.

/** Lengths as Zulip (Python) and PostgreSQL count them: in code points, not UTF-16 units. */
export function codePoints(text: string): number {
  let count = 0;
  for (const _char of text) count += 1;
  return count;
}

/** `text` matched literally inside a regular expression. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Zulip's truncate_content: text longer than `max` code points is cut to leave room for
 * `suffix` (Zulip's "\n[message truncated]" for messages, "..." for topics). */
export function truncateText(text: string, max: number, suffix: string): string {
  if (text.length <= max) return text;
  // A code point takes at most two code units: this slice holds more than `max` code points
  // whenever the text does.
  const chars = [...text.slice(0, (max + 1) * 2)];
  if (chars.length <= max) return text;
  return chars.slice(0, Math.max(0, max - suffix.length)).join('') + suffix;
}

/** Zulip's check_string_is_printable: the 1-based position of the first control character,
 * surrogate or Unicode noncharacter, or null when there is none. */
export function unprintablePosition(text: string): number | null {
  let position = 0;
  for (const char of text) {
    position += 1;
    if (/[\p{Cc}\p{Cs}]/u.test(char)) return position;
    const code = char.codePointAt(0)!;
    if ((code >= 0xfdd0 && code <= 0xfdef) || (code & 0xfffe) === 0xfffe) return position;
  }
  return null;
}

/** Zulip's RESOLVED_TOPIC_PREFIX: a topic marked resolved starts with it. */
export const RESOLVED_TOPIC_PREFIX = '✔ ';
