// GET /server_settings: what a client asks before logging in (no authentication); GET
// /openapi.json: Parley's own API description, generated from the route definitions.
import { Router } from 'express';
import { getConfig, ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION } from '@parley/config';
import { defineRoute, openApiDocument } from '@parley/http';
import { anonymousEndpoint, realmUrl } from '@parley/auth';
import { realmIconUrl } from '../lib/realm-state';
import { renderDescription } from '../presenters/realm';

export const serverRoutes = Router();

defineRoute(serverRoutes, '/server_settings', {
  GET: anonymousEndpoint({}, ({ req, res }) => {
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
        realm_web_public_access_enabled: realm.webPublicAccessEnabled,
      });
    }
    return settings;
  }),
});

/** Built on the first request, once every router has registered its routes. */
let description: Record<string, unknown> | undefined;

serverRoutes.get('/openapi.json', (_req, res) => {
  description ??= openApiDocument({
    title: 'Parley API',
    version: `${ZULIP_VERSION} (feature level ${ZULIP_FEATURE_LEVEL})`,
    description:
      "Parley's REST API, compatible with Zulip's. Generated from the route definitions: every " +
      "path, method and parameter Parley accepts; answers share Zulip's envelope (result, msg, " +
      'code). The events tier (GET/DELETE /events) documents itself on its own port.',
  });
  res.json(description);
});
