// Alert words (Zulip's zerver/lib/alert_words.py and AlertWordNotificationProcessor): a user's
// words, and which recipients of a message have one of theirs in it. Matching ignores case and
// fenced code, and a word counts only between the separators Zulip recognizes.
import { getPrisma, query, statement, type Tx } from '@parley/db';

/** Zulip's allowed_before_punctuation and allowed_after_punctuation. */
const BEFORE = new Set([' ', '\n', '(', '"', '.', ',', "'", ';', '[', '*', '`', '>']);
const AFTER = new Set([' ', '\n', ')', '?', ':', '.', ',', "'", ';', ']', '!', '*', '`']);

/** A user's alert words, in the order they were added, with their first spelling. */
const alertWordRowsOf = statement<{ word: string }, [number]>(
  `SELECT word FROM alert_word WHERE user_profile_id = $1 ORDER BY id`,
);

/** The user's alert words, in the caller's transaction if any. */
export async function alertWordsOf(userId: number): Promise<string[]> {
  return (await query(alertWordRowsOf, [userId])).map((row) => row.word);
}

/** Code blocks are never searched (in Zulip the fenced-code preprocessor runs first); quote and
 * spoiler fences hold ordinary text. */
export function searchableText(content: string): string {
  const kept: string[] = [];
  let fence: string | null = null;
  for (const line of content.split('\n')) {
    const opening = /^(`{3,}|~{3,})\s*([^\s`~]*)/.exec(line);
    if (fence === null) {
      if (opening && !['quote', 'spoiler'].includes(opening[2]!.toLowerCase())) {
        fence = opening[1]!;
        continue;
      }
      kept.push(line);
    } else if (
      line.trim() === fence ||
      (line.startsWith(fence) && line.slice(fence.length).trim() === '')
    ) {
      fence = null;
    }
  }
  return kept.join('\n').toLowerCase();
}

export function containsAlertWord(text: string, word: string): boolean {
  const needle = word.toLowerCase();
  if (needle === '') return false;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
    const end = at + needle.length;
    const before = at === 0 || BEFORE.has(text[at - 1]!);
    const after = end >= text.length || AFTER.has(text[end]!);
    if (before && after) return true;
  }
  return false;
}

/** The recipients among `userIds` who have an alert word in `content`. */
export async function usersAlertedBy(
  content: string,
  userIds: number[],
  db: Tx = getPrisma(),
): Promise<Set<number>> {
  const alerted = new Set<number>();
  if (userIds.length === 0) return alerted;
  const words = await db.$queryRaw<{ user_profile_id: number; word: string }[]>`
    SELECT user_profile_id, word FROM alert_word WHERE user_profile_id = ANY(${userIds}::int[])`;
  if (words.length === 0) return alerted;
  const text = searchableText(content);
  for (const { user_profile_id: userId, word } of words)
    if (!alerted.has(userId) && containsAlertWord(text, word)) alerted.add(userId);
  return alerted;
}
