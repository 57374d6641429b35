// Quoting one message in another, as the Notification Bot's reminders and message reports do:
// a fence the quoted text cannot close, the time it was sent in Zulip's global-time syntax, and
// a direct message's address in the web app (Zulip's get_unused_fence,
// datetime_to_global_time and pm_message_url).
import { realmUrl } from '@parley/auth';
import { query, statement, type Message, type Realm } from '@parley/db';

/** A fence of backticks longer than any fence opening a line of `text`. */
export function unusedFence(text: string): string {
  let length = 3;
  for (const match of text.matchAll(/^ {0,3}(`{3,})/gm))
    length = Math.max(length, match[1]!.length + 1);
  return '`'.repeat(length);
}

/** <time:2026-11-30T11:42:32+00:00>, which every client shows in its reader's time zone. */
export function globalTimeSyntax(date: Date): string {
  return `<time:${date.toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`;
}

export interface Participant {
  id: number;
  fullName: string;
}

const participantsOf = statement<Participant, [number]>(
  `SELECT u.id, u.full_name AS "fullName" FROM user_message um
   JOIN user_profile u ON u.id = um.user_profile_id
   WHERE um.message_id = $1 ORDER BY u.id`,
);

/** A direct message's participants, by id, and its address in the web app. */
export async function directMessageLink(
  realm: Pick<Realm, 'stringId'>,
  message: Pick<Message, 'id'>,
): Promise<{ participants: Participant[]; url: string }> {
  const participants = await query(participantsOf, [message.id]);
  const ids = participants.map((user) => user.id);
  const slug = `${ids.join(',')}-${ids.length >= 3 ? 'group' : 'dm'}`;
  return { participants, url: `${realmUrl(realm)}/#narrow/dm/${slug}/near/${message.id}` };
}
