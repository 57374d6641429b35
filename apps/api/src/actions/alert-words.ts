// Adding and removing alert words (Zulip's do_add_alert_words / do_remove_alert_words): words
// are trimmed, blank ones dropped, and compared ignoring case; the user's clients get the whole
// list after every request, changed or not, as in Zulip.
import type { ActionContext, User } from '@parley/db';
import { alertWordsOf } from '../lib/alert-words';
import { sendEventOnCommit } from '../lib/events';

export async function doAddAlertWords(
  ctx: ActionContext,
  user: User,
  words: string[],
): Promise<string[]> {
  // Within one request the last spelling of a word wins; existing words keep theirs. Case is
  // folded by the database's lower(), the same that indexes the words.
  const cleaned = words.map((w) => w.trim()).filter((w) => w !== '');
  if (cleaned.length > 0)
    await ctx.tx.$executeRaw`
      INSERT INTO alert_word (realm_id, user_profile_id, word)
      SELECT DISTINCT ON (lower(w)) ${user.realmId}, ${user.id}, w
      FROM unnest(${cleaned}::text[]) WITH ORDINALITY AS t(w, n)
      ORDER BY lower(w), n DESC
      ON CONFLICT (user_profile_id, lower(word)) DO NOTHING`;
  return sendAlertWords(ctx, user);
}

export async function doRemoveAlertWords(
  ctx: ActionContext,
  user: User,
  words: string[],
): Promise<string[]> {
  if (words.length > 0)
    await ctx.tx.$executeRaw`
      DELETE FROM alert_word
      WHERE user_profile_id = ${user.id}
        AND lower(word) IN (SELECT lower(w) FROM unnest(${words}::text[]) AS t(w))`;
  return sendAlertWords(ctx, user);
}

async function sendAlertWords(ctx: ActionContext, user: User): Promise<string[]> {
  const words = await alertWordsOf(user.id);
  sendEventOnCommit(ctx, { type: 'alert_words', alert_words: words }, [user.id]);
  return words;
}
