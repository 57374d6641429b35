// The organization's email domains: GET and POST /realm/domains, PATCH and DELETE
// /realm/domains/{domain}. Everyone may list them; only owners change them, as in Zulip.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  accessRealmDomain,
  checkNewRealmDomain,
  doAddRealmDomain,
  doChangeRealmDomain,
  doRemoveRealmDomain,
  lockRealmDomains,
} from '../actions/realm-domains';
import { realmDomainsOf } from '../lib/realm-domains';

export const realmDomainRoutes = Router();

defineRoute(realmDomainRoutes, '/realm/domains', {
  GET: userEndpoint(
    { response: z.object({ domains: z.array(schema.realmDomain) }) },
    async ({ realm }) => ({ domains: await realmDomainsOf(realm.id) }),
  ),
  POST: userEndpoint(
    {
      ownerOnly: true,
      params: { domain: p.string({ maxLength: 1000 }), allow_subdomains: p.bool() },
      // [id, domain], as Zulip answers.
      response: z.object({ new_domain: z.array(z.union([schema.id, z.string()])) }),
    },
    async ({ user, params }) =>
      runAction(async (ctx) => {
        await lockRealmDomains(ctx, user);
        const domain = await checkNewRealmDomain(ctx, user, params.domain);
        const id = await doAddRealmDomain(ctx, user, domain, params.allow_subdomains);
        return { new_domain: [id, domain] };
      }),
  ),
});

const domainPath = { domain: p.string({ maxLength: 1000 }) };

defineRoute(realmDomainRoutes, '/realm/domains/:domain', {
  PATCH: userEndpoint(
    {
      ownerOnly: true,
      path: domainPath,
      params: { allow_subdomains: p.bool() },
      response: schema.empty,
    },
    async ({ user, path, params }) => {
      await runAction(async (ctx) => {
        await lockRealmDomains(ctx, user);
        const realmDomain = await accessRealmDomain(ctx, user, path.domain);
        await doChangeRealmDomain(ctx, user, realmDomain, params.allow_subdomains);
      });
      return {};
    },
  ),
  DELETE: userEndpoint(
    { ownerOnly: true, path: domainPath, response: schema.empty },
    async ({ user, path }) => {
      await runAction(async (ctx) => {
        await lockRealmDomains(ctx, user);
        await doRemoveRealmDomain(ctx, user, await accessRealmDomain(ctx, user, path.domain));
      });
      return {};
    },
  ),
});
