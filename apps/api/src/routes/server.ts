// GET /server_settings: what a client asks before logging in (no authentication); GET
// /openapi.json: Parley's own API description, generated from the route definitions.
import { Router } from 'express';
import { z } from 'zod';
import { getConfig, ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION } from '@parley/config';
import { documentEventsEndpoints } from '@parley/events';
import { defineRoute, openApiDocument } from '@parley/http';
import { anonymousEndpoint, realmUrl } from '@parley/auth';
import { realmIconUrl } from '../lib/realm-state';
import { webPublicAccessEnabled } from '../lib/streams';
import { renderDescription } from '../presenters/realm';

export const serverRoutes = Router();

const serverSettings = z.object({
  authentication_methods: z.record(z.string(), z.boolean()),
  external_authentication_methods: z.array(z.unknown()),
  zulip_feature_level: z.int(),
  zulip_version: z.string(),
  zulip_merge_base: z.string(),
  push_notifications_enabled: z.boolean(),
  is_incompatible: z.boolean(),
  email_auth_enabled: z.boolean(),
  require_email_format_usernames: z.boolean(),
  // Only when the Host names an organization.
  realm_uri: z.string().optional(),
  realm_url: z.string().optional(),
  realm_name: z.string().optional(),
  realm_icon: z.string().optional(),
  realm_description: z.string().optional(),
  realm_web_public_access_enabled: z.boolean().optional(),
});

defineRoute(serverRoutes, '/server_settings', {
  GET: anonymousEndpoint({ response: serverSettings }, async ({ req, res }) => {
    const realm = res.locals.realm;
    const passwordAuth = realm?.passwordAuthEnabled ?? true;
    const settings: Record<string, unknown> = {
      authentication_methods: {
        password: passwordAuth,
        dev: false,
        email: passwordAuth,
        ldap: false,
        remoteuser: false,
        github: false,
        azuread: false,
        gitlab: false,
        apple: false,
        google: false,
        saml: false,
        'openid connect': false,
      },
      external_authentication_methods: [],
      zulip_feature_level: ZULIP_FEATURE_LEVEL,
      zulip_version: ZULIP_VERSION,
      zulip_merge_base: ZULIP_MERGE_BASE,
      push_notifications_enabled: getConfig().PUSH_NOTIFICATIONS_ENABLED,
      is_incompatible: (req.get('user-agent') ?? '').startsWith('ZulipInvalid'),
      email_auth_enabled: passwordAuth,
      require_email_format_usernames: true,
    };
    // Like Zulip, the realm_* keys appear only when the host names an organization.
    if (realm) {
      const url = realmUrl(realm);
      Object.assign(settings, {
        realm_uri: url,
        realm_url: url,
        realm_name: realm.name,
        realm_icon: realmIconUrl(realm),
        realm_description: renderDescription(realm.description),
        realm_web_public_access_enabled: await webPublicAccessEnabled(realm),
      });
    }
    return settings;
  }),
});

/** Built on the first request, once every router has registered its routes. */
let description: Record<string, unknown> | undefined;

serverRoutes.get('/openapi.json', (_req, res) => {
  if (!description) documentEventsEndpoints();
  description ??= openApiDocument({
    title: 'Parley API',
    version: `${ZULIP_VERSION} (feature level ${ZULIP_FEATURE_LEVEL})`,
    description:
      "Parley's REST API, compatible with Zulip's. Generated from the route definitions: every " +
      "path, method and parameter Parley accepts; answers share Zulip's envelope (result, msg, " +
      "code) and each route's declared data. GET and DELETE /events are served by the events tier.",
  });
  res.json(description);
});
