// Zulip's add_new_user_history (zerver/actions/create_user.py): a new person's feed is not
// empty. They get copies of the most recent messages in the channels they joined on creation
// and of the organization's onboarding messages (onboarding_user_message, written by
// actions/initial-realm.ts). Where the organization has onboarding messages, only those
// arrive unread (starred as recorded); otherwise the newest 20 do.
import { flagsToBitmask, query, statement } from '@parley/db';

/** Zulip's MAX_NUM_RECENT_MESSAGES and MAX_NUM_RECENT_UNREAD_MESSAGES. */
const RECENT_MESSAGES = 1000;
const RECENT_UNREAD_MESSAGES = 20;

const READ = flagsToBitmask(['read']);
const STARRED = flagsToBitmask(['starred']);
const HISTORICAL = flagsToBitmask(['historical']);

/** One statement: $1 the user, $2 their organization. The channels are those the user is
 * subscribed to whose history subscribers may read (the user has just joined them all). */
const backfill = statement<never, [number, number]>(`
  WITH recent AS (
    SELECT m.id FROM message m
    WHERE m.realm_id = $2 AND m.recipient_id IN (
      SELECT s.recipient_id FROM subscription s JOIN stream st ON st.recipient_id = s.recipient_id
      WHERE s.user_profile_id = $1 AND s.active AND st.history_public_to_subscribers)
    ORDER BY m.id DESC LIMIT ${RECENT_MESSAGES}
  ), onboarding AS (
    SELECT message_id AS id, flags FROM onboarding_user_message WHERE realm_id = $2
  ), fresh AS (
    SELECT id FROM recent UNION SELECT id FROM onboarding
    EXCEPT SELECT message_id FROM user_message WHERE user_profile_id = $1
  ), ranked AS (
    SELECT f.id, o.flags AS onboarding, row_number() OVER (ORDER BY f.id DESC) AS newest
    FROM fresh f LEFT JOIN onboarding o ON o.id = f.id
  )
  INSERT INTO user_message (user_profile_id, message_id, flags)
  SELECT $1, id, ${HISTORICAL} | CASE
      WHEN EXISTS (SELECT 1 FROM onboarding) THEN
        CASE WHEN onboarding IS NULL THEN ${READ} ELSE onboarding & ${STARRED} END
      WHEN newest > ${RECENT_UNREAD_MESSAGES} THEN ${READ}
      ELSE 0 END
  FROM ranked
  ON CONFLICT DO NOTHING`);

/** Gives a person just created, and subscribed to their first channels, their history. Runs
 * in the creating transaction. */
export async function addNewUserHistory(userId: number, realmId: number): Promise<void> {
  await query(backfill, [userId, realmId]);
}
