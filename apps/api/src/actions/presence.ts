// Presence updates (Zulip's do_update_user_presence). Every client pings every minute, so a ping
// is one SQL statement: it reads the stored timestamps, applies Zulip's rules, and only when
// something changed takes the next change id and writes the row. Events go out only when a
// user comes online (or first appears), and only to organizations small enough for that to be
// worth it; everyone else learns by polling, as in Zulip.
//
// Change ids come from one Postgres sequence, not Zulip's locked per-organization counter: the
// lock serialized every ping of an organization behind the previous commit. Without it, a
// change committed after a later id was read can be missed by one incremental poll; the user's
// next ping (a minute later) is a new change, well inside the 200 s offline threshold, so
// presence heals itself.
import { getPrisma, Prisma, type ActionContext, type Realm, type Tx, type User } from '@parley/db';
import type { ZulipEvent } from '@parley/events';
import { sendEventNow, sendEventOnCommit } from '../lib/events';
import {
  legacyPresence,
  modernPresence,
  OFFLINE_THRESHOLD_SECS,
  PRESENCE_PING_INTERVAL_SECS,
  PRESENCE_UPDATE_MIN_FREQ_SECS,
  presenceLimitedByUserAccess,
  serverTimestamp,
} from '../lib/presence';
import { canSeeDeliveryEmail, dummyEmail, usersWhoCanAccess, type Viewer } from '../lib/users';
import { doChangeSetting } from './users';

export type PresenceStatus = 'active' | 'idle';

/** Zulip's USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS. */
const MAX_PRESENCE_EVENT_RECIPIENTS = 100;
/** An active ping this long after the last activity means the user came (back) online. */
const CAME_ONLINE_AFTER_SECS = OFFLINE_THRESHOLD_SECS - PRESENCE_PING_INTERVAL_SECS - 10;

interface PresenceWrite {
  creating: boolean;
  changed: boolean;
  became_online: boolean;
  last_active_time: Date | null;
  last_connected_time: Date | null;
}

/** One statement: the stored row (if any) → the new timestamps → when they differ, the next
 * change id and the upsert. */
function presenceWrite(user: User, now: Date, active: boolean): Prisma.Sql {
  return Prisma.sql`
    WITH prior AS (
      SELECT up.user_profile_id IS NULL AS creating,
             up.last_active_time AS a, up.last_connected_time AS c
      FROM (SELECT 1) AS one
        LEFT JOIN user_presence up ON up.user_profile_id = ${user.id}
    ),
    calc AS (
      SELECT creating, a, c,
        (${active} AND (a IS NULL OR ${now}::timestamptz - a
          > make_interval(secs => ${PRESENCE_UPDATE_MIN_FREQ_SECS}))) AS refresh_active,
        (c IS NULL OR ${now}::timestamptz - c
          > make_interval(secs => ${PRESENCE_UPDATE_MIN_FREQ_SECS})) AS refresh_connected,
        (${active} AND (a IS NULL OR ${now}::timestamptz - a
          > make_interval(secs => ${CAME_ONLINE_AFTER_SECS}))) AS became_online
      FROM prior
    ),
    next AS (
      SELECT creating, became_online,
        CASE WHEN creating THEN CASE WHEN ${active} THEN ${now}::timestamptz END
             WHEN refresh_active THEN ${now}::timestamptz ELSE a END AS new_a,
        CASE WHEN creating OR refresh_active OR refresh_connected THEN ${now}::timestamptz
             ELSE c END AS new_c,
        (creating OR refresh_active OR refresh_connected) AS changed
      FROM calc
    ),
    written AS (
      INSERT INTO user_presence
        (user_profile_id, realm_id, last_active_time, last_connected_time, last_update_id)
      SELECT ${user.id}, ${user.realmId}, new_a, new_c, nextval('user_presence_update_id_seq')
      FROM next WHERE changed
      -- Concurrent pings of one user (a web and a desktop client) both read the old row: the
      -- merge keeps the newest of each time, so an idle ping cannot undo an active one.
      ON CONFLICT (user_profile_id) DO UPDATE SET
        last_active_time = GREATEST(user_presence.last_active_time, EXCLUDED.last_active_time),
        last_connected_time =
          GREATEST(user_presence.last_connected_time, EXCLUDED.last_connected_time),
        last_update_id = EXCLUDED.last_update_id
      RETURNING user_profile_id
    )
    SELECT creating, changed, became_online,
           new_a AS last_active_time, new_c AS last_connected_time
    FROM next`;
}

async function writePresence(db: Tx, user: User, now: Date, active: boolean) {
  const [row] = await db.$queryRaw<PresenceWrite[]>(presenceWrite(user, now, active));
  return row!;
}

/** A client's ping. Users who turned presence off are not recorded (they look offline). */
export async function doUpdatePresence(
  realm: Realm,
  user: User,
  status: PresenceStatus,
  now = new Date(),
): Promise<void> {
  if (!user.presenceEnabled) return;
  const write = await writePresence(getPrisma(), user, now, status === 'active');
  if (!write.changed || !(write.creating || write.became_online)) return;
  for (const { event, users } of await presenceEvents(getPrisma(), realm, user, write, false))
    await sendEventNow(event, users);
}

/** Turning presence off backdates the timestamps past the offline threshold, so the user looks
 * offline at once; turning it on records them active now. Either way everyone is told. */
export async function doSetPresenceEnabled(
  ctx: ActionContext,
  realm: Realm,
  user: User,
  enabled: boolean,
): Promise<void> {
  if (user.presenceEnabled === enabled) return;
  await doChangeSetting(ctx, user, 'presence_enabled', enabled);
  const now = new Date();
  let write: PresenceWrite | null;
  if (enabled) {
    write = await writePresence(ctx.tx, { ...user, presenceEnabled: true }, now, true);
  } else {
    const cutoff = new Date(
      now.getTime() - (OFFLINE_THRESHOLD_SECS + PRESENCE_UPDATE_MIN_FREQ_SECS + 10) * 1000,
    );
    const [row] = await ctx.tx.$queryRaw<PresenceWrite[]>`
      UPDATE user_presence SET
        last_active_time = LEAST(last_active_time, ${cutoff}::timestamptz),
        last_connected_time = LEAST(last_connected_time, ${cutoff}::timestamptz),
        last_update_id = nextval('user_presence_update_id_seq')
      WHERE user_profile_id = ${user.id}
      RETURNING false AS creating, true AS changed, false AS became_online,
                last_active_time, last_connected_time`;
    write = row ?? null;
  }
  if (!write) return;
  for (const { event, users } of await presenceEvents(ctx.tx, realm, user, write, true))
    sendEventOnCommit(ctx, event, users);
}

/** Zulip's send_presence_changed: everyone active in the organization hears of it (under
 * presenceLimitedByUserAccess(), everyone who may access the user), in the legacy form (the events tier
 * rewrites it for modern and slim clients); the address in it depends on who may see the real
 * one. */
async function presenceEvents(
  db: Tx,
  realm: Realm,
  user: User,
  write: PresenceWrite,
  force: boolean,
): Promise<{ event: ZulipEvent; users: number[] }[]> {
  let viewers: Viewer[];
  if (presenceLimitedByUserAccess()) {
    // Zulip's get_user_ids_who_can_access_user: guests who may not access the user are left
    // out, and the size limit counts only those who remain.
    viewers = await usersWhoCanAccess(realm.id, db, user);
    if (!force && viewers.length > MAX_PRESENCE_EVENT_RECIPIENTS) return [];
  } else {
    if (!force) {
      // Counted without ordering or fetching: in a large organization this is the whole cost
      // of a comeback ping.
      const [{ n }] = await db.$queryRaw<[{ n: number }]>`
        SELECT count(*)::int AS n FROM (SELECT 1 FROM user_profile
          WHERE realm_id = ${realm.id} AND is_active LIMIT ${MAX_PRESENCE_EVENT_RECIPIENTS + 1}) s`;
      if (n > MAX_PRESENCE_EVENT_RECIPIENTS) return [];
    }
    viewers = await usersWhoCanAccess(realm.id, db);
  }
  const modern = modernPresence({ ...write, date_joined: user.dateJoined });
  const build = (visible: boolean): ZulipEvent => ({
    type: 'presence',
    user_id: user.id,
    email: visible ? user.deliveryEmail : dummyEmail(user, realm),
    server_timestamp: serverTimestamp(),
    presence: { website: legacyPresence(modern) },
    internal_data: { modern_presence: modern },
  });
  return [true, false].flatMap((visible) => {
    const users = viewers
      .filter((viewer) => canSeeDeliveryEmail(viewer, user) === visible)
      .map((viewer) => viewer.id);
    return users.length > 0 ? [{ event: build(visible), users }] : [];
  });
}
