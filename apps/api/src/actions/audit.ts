// Organization-level audit entries (Zulip's RealmAuditLog) for changes an actor makes outside
// the channel and user actions' own entries: linkifiers, custom emoji, playgrounds, channel
// folders, a person's navigation views.
import type { ActionContext, User } from '@parley/db';

/** What an entry is about besides the organization (Zulip's modified_* columns). */
export interface AuditSubject {
  modifiedUserId?: number;
  modifiedChannelFolderId?: number;
}

export async function auditRealmChange(
  ctx: ActionContext,
  actor: User,
  eventType: number,
  extraData: Record<string, unknown>,
  subject: AuditSubject = {},
): Promise<void> {
  await ctx.tx.auditLog.create({
    data: {
      realmId: actor.realmId,
      actingUserId: actor.id,
      ...subject,
      eventType,
      // Through JSON: undefined values and class instances do not belong in the log.
      extraData: JSON.parse(JSON.stringify(extraData)) as object,
    },
  });
}
