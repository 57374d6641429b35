// Endpoints of both tiers: `userEndpoint` authenticates (HTTP Basic), then parses and runs the
// handler like the shared `endpoint`; `realmEndpoint` needs only the Host's organization.
import type { RequestHandler } from 'express';
import { Role, type Realm, type User } from '@parley/db';
import {
  HumanUsersOnlyError,
  InvalidSubdomainError,
  OrganizationAdministratorRequiredError,
  OrganizationOwnerRequiredError,
} from '@parley/errors';
import {
  attachDoc,
  bodyParsers,
  docOf,
  endpoint,
  runMiddleware,
  type EndpointInput,
  type UploadLimits,
  type EndpointSpec,
  type Json,
  type ParamShape,
} from '@parley/http';
import { authenticate } from './basic';
import { rateLimitIp, rateLimitUser } from './rate-limits';

type NoParams = Record<never, never>;

export interface UserEndpointInput<
  P extends ParamShape,
  Q extends ParamShape,
> extends EndpointInput<P, Q> {
  user: User;
  realm: Realm;
}

export interface UserEndpointOptions {
  /** Zulip's human_users_only: bots are refused. */
  humansOnly?: boolean;
  /** Zulip's require_realm_admin: checked before the parameters. */
  adminOnly?: boolean;
  /** Zulip's require_realm_owner: checked before the parameters. */
  ownerOnly?: boolean;
  /** An upload endpoint: its body (with files up to these limits) is parsed only once the
   * user is authenticated. Its router must be mounted before the general body parsers. The
   * limits may depend on the organization (its file size limit). */
  uploads?: (realm: Realm) => UploadLimits & { maxBodyBytes: number };
  /** Whose api_by_user budget the request uses (the events tier keeps its own). */
  rateLimitScope?: 'api' | 'events';
}

export function userEndpoint<P extends ParamShape = NoParams, Q extends ParamShape = NoParams>(
  spec: EndpointSpec<P, Q> & UserEndpointOptions,
  handler: (input: UserEndpointInput<P, Q>) => Promise<Json> | Json,
): RequestHandler {
  // Not async: the handler's own promise is what endpoint() awaits (one frame fewer for a
  // long-poll to hold while it waits).
  const inner = endpoint(spec, (input) =>
    handler({ ...input, user: input.res.locals.user, realm: input.res.locals.realm! }),
  );
  return attachDoc<RequestHandler>(
    async (req, res, next) => {
      const user = await authenticate(req, res);
      await rateLimitUser(req, res, user.id, spec.rateLimitScope ?? 'api');
      if (spec.humansOnly && user.isBot) throw new HumanUsersOnlyError();
      if (spec.adminOnly && user.role > Role.ADMINISTRATOR)
        throw new OrganizationAdministratorRequiredError();
      if (spec.ownerOnly && user.role > Role.OWNER) throw new OrganizationOwnerRequiredError();
      if (spec.uploads) {
        const limits = spec.uploads(res.locals.realm!);
        await runMiddleware(bodyParsers(limits.maxBodyBytes, limits), req, res);
      }
      await inner(req, res, next);
    },
    { ...docOf(inner)!, auth: 'basic' },
  );
}

/** An endpoint anyone may call: it counts against the caller's IP address (api_by_ip). */
export function anonymousEndpoint<P extends ParamShape = NoParams, Q extends ParamShape = NoParams>(
  spec: EndpointSpec<P, Q>,
  handler: (input: EndpointInput<P, Q>) => Promise<Json> | Json,
): RequestHandler {
  const inner = endpoint(spec, handler);
  return attachDoc<RequestHandler>(async (req, res, next) => {
    await rateLimitIp(req, res);
    await inner(req, res, next);
  }, docOf(inner)!);
}

/** An unauthenticated endpoint that needs the organization of the Host header. */
export function realmEndpoint<P extends ParamShape = NoParams, Q extends ParamShape = NoParams>(
  spec: EndpointSpec<P, Q>,
  handler: (input: EndpointInput<P, Q> & { realm: Realm }) => Promise<Json> | Json,
): RequestHandler {
  return anonymousEndpoint(spec, (input) => {
    const realm = input.res.locals.realm;
    if (!realm) throw new InvalidSubdomainError();
    return handler({ ...input, realm });
  });
}
