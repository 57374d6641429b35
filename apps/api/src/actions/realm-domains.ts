// The organization's email domains (Zulip's zerver/actions/realm_domains.py and the checks of
// its view): owners add, change and remove them; each change is audited with the whole list and
// reaches every active member as a realm_domains event.
import { AuditLogEvent, isUniqueViolation, type ActionContext, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { invalidDomainReason, realmDomainsOf, type RealmDomainEntry } from '../lib/realm-domains';
import { activeUserIds } from '../lib/users';
import { auditRealmChange } from './audit';
import { doUpdateRealmSettings } from './realm-settings';

/** Every change to the list locks the organization first: removing the last domain turns
 * emails_restricted_to_domains off, which two removals (or a removal and an addition) at once
 * must not both decide on a list the other is changing. NO KEY UPDATE, as invitations lock
 * it: rows that reference the organization (every message sent) can still be written. */
export async function lockRealmDomains(ctx: ActionContext, actor: User): Promise<void> {
  await ctx.tx.$queryRaw`SELECT id FROM realm WHERE id = ${actor.realmId} FOR NO KEY UPDATE`;
}

/** Zulip's create_realm_domain checks: a valid domain (lowercased, stripped) not yet listed. */
export async function checkNewRealmDomain(
  ctx: ActionContext,
  actor: User,
  raw: string,
): Promise<string> {
  const domain = raw.trim().toLowerCase();
  const reason = invalidDomainReason(domain);
  if (reason) throw new JsonableError(`Invalid domain: ${reason}`);
  if (await ctx.tx.realmDomain.findFirst({ where: { realmId: actor.realmId, domain } }))
    throw new JsonableError(alreadyListed(domain));
  return domain;
}

const alreadyListed = (domain: string) =>
  `The domain ${domain} is already a part of your organization.`;

/** Zulip's "No entry found" for a domain the organization does not list, locked until the
 * transaction ends so that a concurrent change or removal waits its turn. */
export async function accessRealmDomain(ctx: ActionContext, actor: User, domain: string) {
  const [row] = await ctx.tx.$queryRaw<{ id: number; allow_subdomains: boolean }[]>`
    SELECT id, allow_subdomains FROM realm_domain
    WHERE realm_id = ${actor.realmId} AND domain = ${domain} FOR UPDATE`;
  if (!row) throw new JsonableError(`No entry found for domain ${domain}.`);
  return { id: row.id, domain, allowSubdomains: row.allow_subdomains };
}

async function tellEveryone(
  ctx: ActionContext,
  realmId: number,
  event: { type: string } & Record<string, unknown>,
): Promise<void> {
  sendEventOnCommit(ctx, event, await activeUserIds(realmId, ctx.tx));
}

export async function doAddRealmDomain(
  ctx: ActionContext,
  actor: User,
  domain: string,
  allowSubdomains: boolean,
): Promise<number> {
  const row = await ctx.tx.realmDomain
    .create({ data: { realmId: actor.realmId, domain, allowSubdomains } })
    .catch((error: unknown) => {
      if (isUniqueViolation(error)) throw new JsonableError(alreadyListed(domain));
      throw error;
    });
  const entry: RealmDomainEntry = { domain, allow_subdomains: allowSubdomains };
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_DOMAIN_ADDED, {
    realm_domains: await realmDomainsOf(actor.realmId),
    added_domain: entry,
  });
  await tellEveryone(ctx, actor.realmId, { type: 'realm_domains', op: 'add', realm_domain: entry });
  return row.id;
}

export async function doChangeRealmDomain(
  ctx: ActionContext,
  actor: User,
  realmDomain: { id: number; domain: string },
  allowSubdomains: boolean,
): Promise<void> {
  await ctx.tx.realmDomain.update({ where: { id: realmDomain.id }, data: { allowSubdomains } });
  const entry: RealmDomainEntry = { domain: realmDomain.domain, allow_subdomains: allowSubdomains };
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_DOMAIN_CHANGED, {
    realm_domains: await realmDomainsOf(actor.realmId),
    changed_domain: entry,
  });
  await tellEveryone(ctx, actor.realmId, {
    type: 'realm_domains',
    op: 'change',
    realm_domain: entry,
  });
}

/** Zulip's do_remove_realm_domain: removing the last domain also turns
 * emails_restricted_to_domains off, since restricting to no domain would refuse everyone. */
export async function doRemoveRealmDomain(
  ctx: ActionContext,
  actor: User,
  realmDomain: { id: number; domain: string; allowSubdomains: boolean },
): Promise<void> {
  await ctx.tx.realmDomain.delete({ where: { id: realmDomain.id } });
  const remaining = await realmDomainsOf(actor.realmId);
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_DOMAIN_REMOVED, {
    realm_domains: remaining,
    removed_domain: { domain: realmDomain.domain, allow_subdomains: realmDomain.allowSubdomains },
  });
  // PATCH /realm's own change (audited, announced), which does nothing if already off.
  if (remaining.length === 0)
    await doUpdateRealmSettings(ctx, actor, {
      emails_restricted_to_domains: false,
      groups: {},
      channels: {},
    });
  await tellEveryone(ctx, actor.realmId, {
    type: 'realm_domains',
    op: 'remove',
    domain: realmDomain.domain,
  });
}
