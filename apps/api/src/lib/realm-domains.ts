// The organization's email domains (Zulip's RealmDomain, zerver/lib/domains.py and
// zerver/lib/email_validation.py): GET /realm/domains, /register's realm_domains, and the check
// that an address may join an organization whose emails_restricted_to_domains is on.
import { query, statement, type Realm, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';

export interface RealmDomainEntry {
  domain: string;
  allow_subdomains: boolean;
}

const domainsOfRealm = statement<RealmDomainEntry, [number]>(
  `SELECT domain, allow_subdomains FROM realm_domain WHERE realm_id = $1 ORDER BY id`,
);

/** In the current action's transaction when there is one (typed SQL follows runAction). */
export function realmDomainsOf(realmId: number): Promise<RealmDomainEntry[]> {
  return query(domainsOfRealm, [realmId]);
}

/** Zulip's RealmDomain.domain column holds 80 characters. */
export const MAX_REALM_DOMAIN_LENGTH = 80;

/** Zulip's validate_domain: the reason a (lowercased) domain cannot be one, or null. Zulip's
 * own limit is 255, more than its column holds (a longer domain fails there as a 500): the
 * column's limit gives Zulip's message instead. */
export function invalidDomainReason(domain: string): string | null {
  if (domain.length === 0) return "Domain can't be empty.";
  if (!domain.includes('.')) return 'Domain must have at least one dot (.)';
  if (domain.length > MAX_REALM_DOMAIN_LENGTH) return 'Domain is too long';
  if (domain.startsWith('.') || domain.endsWith('.'))
    return 'Domain cannot start or end with a dot (.)';
  for (const label of domain.split('.')) {
    if (!label) return "Consecutive '.' are not allowed.";
    if (label.startsWith('-') || label.endsWith('-'))
      return "Subdomains cannot start or end with a '-'.";
    if (!/^[a-z0-9-]*$/.test(label)) return "Domain can only have letters, numbers, '.' and '-'s.";
  }
  return null;
}

/** Why an address may not join: outside the organization's domains, or with a "+" in its
 * local part (both only when emails_restricted_to_domains is on). */
export type EmailRefusal = 'outside_domains' | 'contains_plus';

/** Zulip's get_realm_email_validator: reads the domains once, for checking many addresses.
 * Parley keeps no list of disposable mail domains, so disallow_disposable_email_addresses
 * refuses nothing (as Zulip with an empty list would). */
export async function realmEmailValidator(
  tx: Tx,
  realm: Pick<Realm, 'id'>,
): Promise<(email: string) => EmailRefusal | null> {
  const [settings] = await tx.$queryRaw<{ restricted: boolean }[]>`
    SELECT emails_restricted_to_domains AS restricted FROM realm WHERE id = ${realm.id}`;
  if (!settings?.restricted) return () => null;
  const rows = await tx.realmDomain.findMany({ where: { realmId: realm.id } });
  const domains = new Set(rows.map((row) => row.domain));
  const withSubdomains = new Set(rows.filter((row) => row.allowSubdomains).map((r) => r.domain));
  return (email) => {
    const at = email.lastIndexOf('@');
    if (email.slice(0, at).includes('+')) return 'contains_plus';
    let domain = email.slice(at + 1).toLowerCase();
    if (domains.has(domain)) return null;
    // Each parent domain in turn, for entries that allow subdomains.
    while (domain.includes('.')) {
      domain = domain.slice(domain.indexOf('.') + 1);
      if (withSubdomains.has(domain)) return null;
    }
    return 'outside_domains';
  };
}

const PLUS_REFUSED = 'Email addresses containing + are not allowed.';

/** Zulip's words for a refused address, which differ by where it was given. */
const REFUSAL_MESSAGES: Record<
  'invite' | 'create_user' | 'signup',
  (email: string) => Record<EmailRefusal, string>
> = {
  // validate_email_is_valid, per address of an invitation.
  invite: () => ({ outside_domains: 'Outside your domain.', contains_plus: PLUS_REFUSED }),
  // create_user_backend (POST /users).
  create_user: (email) => ({
    outside_domains: `Email '${email}' not allowed in this organization`,
    contains_plus: PLUS_REFUSED,
  }),
  // HomepageForm (the address given on a reusable invitation link's form) and
  // accounts_register (an invitation accepted after the domains changed).
  signup: (email) => ({
    outside_domains: `Your email address, ${email}, is not in one of the domains that are allowed to register for accounts in this organization.`,
    contains_plus: PLUS_REFUSED,
  }),
};

/** Refuses an address the organization's domains do not admit, in the words of `where`. */
export async function checkEmailAllowedForRealm(
  tx: Tx,
  realm: Pick<Realm, 'id'>,
  email: string,
  where: keyof typeof REFUSAL_MESSAGES,
): Promise<void> {
  const refusal = (await realmEmailValidator(tx, realm))(email);
  if (refusal) throw new JsonableError(emailRefusalMessage(where, refusal, email));
}

export function emailRefusalMessage(
  where: keyof typeof REFUSAL_MESSAGES,
  refusal: EmailRefusal,
  email: string,
): string {
  return REFUSAL_MESSAGES[where](email)[refusal];
}
