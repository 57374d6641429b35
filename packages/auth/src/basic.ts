// HTTP Basic authentication with `email:api_key`, through passport-http, answering exactly as
// Zulip's authenticated_rest_api_view does: every failure is 401 UNAUTHORIZED with
// `WWW-Authenticate: Basic realm="zulip"`, except a non-Basic scheme (400).
import { timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import { getPrisma, type Realm, type User } from '@parley/db';
import { authCache, type UserWithRealm } from './auth-cache';
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
  let user: UserWithRealm | undefined;
  if (candidate && sameKey(candidate.apiKey, apiKey)) {
    user = candidate;
  } else {
    // A valid key for this address in another organization gets Zulip's subdomain message.
    const elsewhere = await getPrisma().user.findUnique({
      where: { apiKey },
      include: { realm: true },
    });
    if (!elsewhere || elsewhere.deliveryEmail.toLowerCase() !== email.trim().toLowerCase()) {
      throw new UnauthorizedError('Invalid API key');
    }
    user = elsewhere;
  }
  if (user.isBot && user.botType === INCOMING_WEBHOOK_BOT) {
    throw new UnauthorizedError('This API is not available to incoming webhook bots.');
  }
  if (!user.isActive) throw new UnauthorizedError('Account is deactivated');
  if (user.realm.deactivated) throw new UnauthorizedError('This organization has been deactivated');
  if (!realm || user.realmId !== realm.id)
    throw new UnauthorizedError('Account is not associated with this subdomain');
  const { realm: _realm, ...plain } = user;
  return plain;
}

function sameKey(stored: string, given: string): boolean {
  const a = Buffer.from(stored);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

passport.use(
  new BasicStrategy({ realm: 'zulip', passReqToCallback: true }, (req, email, apiKey, done) => {
    const realm = (req.res as Response | undefined)?.locals.realm ?? null;
    validateApiKey(realm, email, apiKey).then(
      (user) => done(null, user),
      (error: unknown) => done(error),
    );
  }),
);

/** Checks the header's shape the way Zulip's get_basic_credentials does, before passport
 * (whose own answer would be a bare challenge, not a JSON error). */
function checkAuthorizationHeader(req: Request): void {
  const header = req.get('authorization');
  if (!header) throw new UnauthorizedError('Missing authorization header for basic auth');
  const parts = header.trim().split(/\s+/);
  if (parts.length !== 2)
    throw new UnauthorizedError('Invalid authorization header for basic auth');
  const [scheme, credentials] = parts as [string, string];
  if (scheme.toLowerCase() !== 'basic')
    throw new JsonableError('This endpoint requires HTTP basic authentication.');
  const decoded = /^[A-Za-z0-9+/]+={0,2}$/.test(credentials)
    ? Buffer.from(credentials, 'base64').toString('utf8')
    : '';
  if (!decoded.includes(':'))
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
