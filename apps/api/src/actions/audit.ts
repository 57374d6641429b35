// Organization-level audit entries (Zulip's RealmAuditLog) for changes that modify no user or
// channel: linkifiers, custom emoji.
import type { ActionContext, User } from '@parley/db';

export async function auditRealmChange(
  ctx: ActionContext,
  actor: User,
  eventType: number,
  extraData: Record<string, unknown>,
): Promise<void> {
  await ctx.tx.auditLog.create({
    data: {
      realmId: actor.realmId,
      actingUserId: actor.id,
      eventType,
      // Through JSON: undefined values and class instances do not belong in the log.
      extraData: JSON.parse(JSON.stringify(extraData)) as object,
    },
  });
}
