// HTTP Basic authentication with `email:api_key`, through passport-http, answering exactly as
// Zulip's authenticated_rest_api_view does: every failure is 401 UNAUTHORIZED with
// `WWW-Authenticate: Basic realm="zulip"`, except a non-Basic scheme (400).
import { timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import { getPrisma, type Realm, type User } from '@parley/db';
import { authCache } from './auth-cache';
import { JsonableError, UnauthorizedError } from '@parley/errors';

const API_KEY = /^[A-Za-z0-9]{32}$/;
const INCOMING_WEBHOOK_BOT = 2;

declare module 'express-serve-static-core' {
  interface Locals {
    user: User;
  }
}

/** Zulip's validate_api_key; every failure here becomes a 401. */
export async function validateApiKey(
  realm: Realm | null,
  email: string,
  rawKey: string,
): Promise<User> {
  const apiKey = rawKey.trim();
  if (!API_KEY.test(apiKey)) throw new UnauthorizedError('Malformed API key');
  // Look the user up by address and compare keys in constant time, so response timing says
  // nothing about which keys exist.
  const candidate = realm ? await authCache().userByEmail(realm, email) : null;
  let user: User;
  // The user's own organization: the Host's for a user found in it.
  let userRealm: Realm;
  if (candidate && realm && sameKey(candidate.apiKey, apiKey)) {
    user = candidate;
    userRealm = realm;
  } else {
    // A valid key for this address in another organization gets Zulip's subdomain message.
    const elsewhere = await getPrisma().user.findUnique({
      where: { apiKey },
      include: { realm: true },
    });
    if (!elsewhere || elsewhere.deliveryEmail.toLowerCase() !== email.trim().toLowerCase()) {
      throw new UnauthorizedError('Invalid API key');
    }
    ({ realm: userRealm, ...user } = elsewhere);
  }
  if (user.isBot && user.botType === INCOMING_WEBHOOK_BOT) {
    throw new UnauthorizedError('This API is not available to incoming webhook bots.');
  }
  if (!user.isActive) throw new UnauthorizedError('Account is deactivated');
  if (userRealm.deactivated) throw new UnauthorizedError('This organization has been deactivated');
  if (!realm || user.realmId !== realm.id)
    throw new UnauthorizedError('Account is not associated with this subdomain');
  return user;
}

function sameKey(stored: string, given: string): boolean {
  const a = Buffer.from(stored);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The `email:api_key` of a Basic Authorization header, or null if it has none (Zulip's
 * get_basic_credentials also splits at the first colon). */
function basicCredentials(req: Request): { email: string; apiKey: string } | null {
  const parts = (req.get('authorization') ?? '').trim().split(/\s+/);
  if (parts.length !== 2 || parts[0]!.toLowerCase() !== 'basic') return null;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(parts[1]!)) return null;
  const decoded = Buffer.from(parts[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return null;
  return { email: decoded.slice(0, colon), apiKey: decoded.slice(colon + 1) };
}

/** passport-http's Basic strategy with the header decoded by Buffer.from: passport-http's own
 * `new Buffer()` runs Node's deprecation check on every request, a measurable share of a
 * long-poll's cost. Its outcomes are otherwise the same. */
class ApiKeyBasicStrategy extends BasicStrategy {
  // Added by passport to every strategy it runs.
  declare success: (user: User) => void;
  declare fail: (challenge: string) => void;
  declare error: (error: Error) => void;

  constructor() {
    super({ realm: 'zulip' }, () => undefined);
  }

  override authenticate(req: Request): void {
    const credentials = basicCredentials(req);
    if (!credentials || !credentials.email || !credentials.apiKey)
      return this.fail('Basic realm="zulip"');
    const realm = (req.res as Response | undefined)?.locals.realm ?? null;
    validateApiKey(realm, credentials.email, credentials.apiKey).then(
      (user) => this.success(user),
      (error: unknown) => this.error(error as Error),
    );
  }
}

passport.use(new ApiKeyBasicStrategy());

/** Checks the header's shape the way Zulip's get_basic_credentials does, before passport
 * (whose own answer would be a bare challenge, not a JSON error). */
function checkAuthorizationHeader(req: Request): void {
  const header = req.get('authorization');
  if (!header) throw new UnauthorizedError('Missing authorization header for basic auth');
  const parts = header.trim().split(/\s+/);
  if (parts.length !== 2)
    throw new UnauthorizedError('Invalid authorization header for basic auth');
  if (parts[0]!.toLowerCase() !== 'basic')
    throw new JsonableError('This endpoint requires HTTP basic authentication.');
  if (!basicCredentials(req))
    throw new UnauthorizedError('Invalid authorization header for basic auth');
}

/** Authenticates the request; resolves with the user or rejects with a JsonableError. */
export function authenticate(req: Request, res: Response): Promise<User> {
  checkAuthorizationHeader(req);
  return new Promise((resolve, reject) => {
    passport.authenticate('basic', { session: false }, (error: unknown, user: User | false) => {
      if (error) return reject(error);
      if (!user)
        return reject(new UnauthorizedError('Invalid authorization header for basic auth'));
      res.locals.user = user;
      res.locals.logContext.user_id = user.id;
      resolve(user);
    })(req, res, () => undefined);
  });
}
