// The organization's defaults for new members' personal settings (PATCH
// /realm/user_settings_defaults; Zulip's update_realm_user_settings_defaults and
// do_set_realm_user_default_setting): each setting that changes is stored, audited and sent to
// everyone in a realm_user_settings_defaults event. Existing members keep their settings.
import { AuditLogEvent, type ActionContext, type Prisma, type User } from '@parley/db';
import { sendEventOnCommit } from '../lib/events';
import { realmUserSettingsDefaults, USER_SETTINGS, type SettingName } from '../lib/user-settings';
import { activeUserIds } from '../lib/users';
import { auditRealmChange } from './audit';

export async function doSetRealmUserDefaults(
  ctx: ActionContext,
  actor: User,
  changes: [SettingName, boolean | number | string][],
): Promise<void> {
  const { tx } = ctx;
  // Serializes concurrent changes and reads the stored defaults fresh.
  await tx.$queryRaw`SELECT id FROM realm WHERE id = ${actor.realmId} FOR UPDATE`;
  const realm = await tx.realm.findUniqueOrThrow({ where: { id: actor.realmId } });
  const current = realmUserSettingsDefaults(realm);
  const stored = { ...(realm.userSettingsDefaults as Record<string, unknown>) };
  let emailVisibility = realm.defaultEmailAddressVisibility;
  const changed: [SettingName, boolean | number | string, unknown][] = [];
  for (const [name, value] of changes) {
    if (current[name] === value) continue;
    changed.push([name, value, current[name]]);
    if (name === 'email_address_visibility') emailVisibility = value as number;
    // Only changes from Zulip's defaults are kept.
    else if (value === USER_SETTINGS[name].default) delete stored[name];
    else stored[name] = value;
  }
  if (changed.length === 0) return;
  await tx.realm.update({
    where: { id: realm.id },
    data: {
      userSettingsDefaults: stored as Prisma.InputJsonObject,
      defaultEmailAddressVisibility: emailVisibility,
    },
  });
  const everyone = await activeUserIds(realm.id, tx);
  for (const [name, value, old] of changed) {
    sendEventOnCommit(
      ctx,
      { type: 'realm_user_settings_defaults', op: 'update', property: name, value },
      everyone,
    );
    await auditRealmChange(ctx, actor, AuditLogEvent.REALM_DEFAULT_USER_SETTINGS_CHANGED, {
      old_value: old,
      new_value: value,
      property: name,
    });
  }
}
