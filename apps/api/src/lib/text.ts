// Text measures shared by validators.

/** Lengths as Zulip (Python) and PostgreSQL count them: in code points, not UTF-16 units. */
export function codePoints(text: string): number {
  let count = 0;
  for (const _char of text) count += 1;
  return count;
}
