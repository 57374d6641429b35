// Organizations are chosen by the Host header, as in Zulip: EXTERNAL_HOST serves the root
// organization (subdomain ""), `sub.EXTERNAL_HOST` the organization `sub`.
import type { RequestHandler } from 'express';
import { getConfig } from '@parley/config';
import type { Realm } from '@parley/db';
import { InvalidSubdomainError } from '@parley/errors';
import { authCache } from './auth-cache';

declare module 'express-serve-static-core' {
  interface Locals {
    /** null only for the root domain when no root organization exists. */
    realm: Realm | null;
  }
}

/** The subdomain a Host header names; hosts outside EXTERNAL_HOST fall back to the root
 * organization (Zulip's get_subdomain does the same). */
export function subdomainFromHost(host: string, externalHost: string): string {
  const external = externalHost.toLowerCase();
  let name = host.toLowerCase();
  // EXTERNAL_HOST without a port matches the host on any port (behind a proxy on :443).
  if (!external.includes(':')) name = name.replace(/:\d+$/, '');
  if (name === external) return '';
  if (name.endsWith(`.${external}`)) return name.slice(0, -external.length - 1);
  return '';
}

/** The host users of `realm` reach it at; also the domain of dummy emails. */
export function realmHost(realm: Pick<Realm, 'stringId'>): string {
  const external = getConfig().EXTERNAL_HOST;
  return realm.stringId === '' ? external : `${realm.stringId}.${external}`;
}

/** The domain of addresses Parley makes up (dummy emails, bot emails): the realm host without
 * its port, which an address cannot carry (and which HTTP Basic's `email:key` would split). */
export function realmEmailDomain(realm: Pick<Realm, 'stringId'>): string {
  return realmHost(realm).replace(/:\d+$/, '');
}

/** Zulip's email domain rule (Django's validate_email): "localhost", or dotted labels ending in
 * a top-level domain of letters (or punycode); a port or an IP address does not qualify. */
export function isEmailDomain(domain: string): boolean {
  return domain.toLowerCase() === 'localhost' || EMAIL_DOMAIN.test(domain);
}

const EMAIL_DOMAIN =
  /^([\p{L}\p{N}]([\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+(\p{L}{2,63}|xn--[a-z0-9-]{1,59})$/iu;

/** Zulip's get_bot_domain: the organization's host when an address can carry it, else
 * FAKE_EMAIL_DOMAIN (EXTERNAL_HOST without its port unless configured). */
export function realmBotDomain(realm: Pick<Realm, 'stringId'>): string {
  const host = realmHost(realm);
  if (isEmailDomain(host)) return host;
  const config = getConfig();
  return config.FAKE_EMAIL_DOMAIN ?? config.EXTERNAL_HOST.replace(/:\d+$/, '');
}

export function realmUrl(realm: Pick<Realm, 'stringId'>): string {
  return `${getConfig().EXTERNAL_URL_SCHEME}://${realmHost(realm)}`;
}

export const resolveRealm: RequestHandler = async (req, res, next) => {
  const subdomain = subdomainFromHost(req.get('host') ?? '', getConfig().EXTERNAL_HOST);
  const realm = await authCache().realmBySubdomain(subdomain);
  if (!realm && subdomain !== '') throw new InvalidSubdomainError();
  res.locals.realm = realm;
  if (realm) res.locals.logContext.realm_id = realm.id;
  next();
};
