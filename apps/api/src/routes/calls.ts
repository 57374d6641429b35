// Video calls (Zulip's zerver/views/video_calls.py; docs/video-calls.md). Under /api/v1: the
// create endpoints (POST /calls/{provider}/create, feature level 493, and Zulip's older
// POST /calls/zoom/create and GET /calls/bigbluebutton/create), starting Zoom's OAuth flow,
// disconnecting Zoom, and opening a BigBlueButton link. At the server's root, what browsers
// and Zoom reach without the API's prefix: the same OAuth start and BigBlueButton join,
// Zoom's redirect back (/calls/zoom/complete) and its deauthorization webhook.
import express, { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import {
  authenticate,
  rateLimitIp,
  rateLimitUser,
  realmUrl,
  resolveRealm,
  userEndpoint,
} from '@parley/auth';
import { getConfig } from '@parley/config';
import type { Realm, User } from '@parley/db';
import { InvalidJSONError, UnauthorizedError } from '@parley/errors';
import {
  attachDoc,
  defineRoute,
  p,
  parseParams,
  runMiddleware,
  sendSuccess,
  type ParamShape,
  type ParamValues,
} from '@parley/http';
import { getLogger } from '@parley/logger';
import {
  completeZoomAuthorization,
  createBigBlueButtonCall,
  createJitsiCall,
  createZoomCall,
  deauthorizeZoomUser,
  joinBigBlueButtonCall,
  revokeZoomAuthorization,
  startZoomAuthorization,
  unknownCallProvider,
} from '../actions/video-calls';
import { getZoomStateRealm } from '../lib/video-calls';
import { parseZoomState, verifyZoomWebhook, zoomUrlValidation } from '../lib/zoom';

/** An authenticated endpoint answering with a redirect (302) instead of the JSON envelope:
 * the OAuth start and the BigBlueButton join, which browsers follow. Errors stay JSON. */
function redirectEndpoint<Q extends ParamShape>(
  params: Q,
  handler: (input: {
    user: User;
    realm: Realm;
    params: ParamValues<Q>;
  }) => Promise<string> | string,
): RequestHandler {
  return attachDoc<RequestHandler>(
    async (req, res) => {
      const user = await authenticate(req, res);
      await rateLimitUser(req, res, user.id, 'api');
      const { values } = parseParams(params, {
        body: (req.body ?? {}) as Record<string, unknown>,
        query: req.query as Record<string, unknown>,
      });
      res.redirect(302, await handler({ user, realm: res.locals.realm!, params: values }));
    },
    { params, response: 'redirect', auth: 'basic' },
  );
}

/** What every create endpoint answers: the meeting's URL. */
const callUrl = z.object({ url: z.string() });

/** The longest BigBlueButton meeting name. Zulip sets no limit; Parley keeps the signed
 * link and the BigBlueButton API's query strings, which carry the name, of a sensible size. */
const MAX_MEETING_NAME_LENGTH = 255;

const zoomCreate = userEndpoint(
  { params: { is_video_call: p.bool().default(true) }, response: callUrl },
  async ({ user, params }) => ({ url: await createZoomCall(user, params.is_video_call) }),
);

const bigBlueButtonJoin = redirectEndpoint({ bigbluebutton: p.string() }, ({ user, params }) =>
  joinBigBlueButtonCall(user, params.bigbluebutton),
);

const zoomRegister = redirectEndpoint({}, ({ user, realm }) => startZoomAuthorization(user, realm));

export const callRoutes = Router();

defineRoute(callRoutes, '/calls/zoom/create', { POST: zoomCreate });

defineRoute(callRoutes, '/calls/zoom/register', { GET: zoomRegister });

defineRoute(callRoutes, '/calls/zoom/token', {
  DELETE: userEndpoint({ response: z.object({}) }, async ({ user }) => {
    await revokeZoomAuthorization(user);
    return {};
  }),
});

defineRoute(callRoutes, '/calls/bigbluebutton/create', {
  // Zulip's form (operationId create-big-blue-button-video-call).
  GET: userEndpoint(
    {
      params: {
        meeting_name: p.string({ maxLength: MAX_MEETING_NAME_LENGTH }),
        voice_only: p.bool().default(false),
      },
      response: callUrl,
    },
    ({ user, params }) => ({
      url: createBigBlueButtonCall(user, params.meeting_name, params.voice_only),
    }),
  ),
  // The feature level 493 form takes no parameters: the meeting is named after the
  // organization unless the client names it.
  POST: userEndpoint(
    {
      params: {
        meeting_name: p.string({ maxLength: MAX_MEETING_NAME_LENGTH }).optional(),
        voice_only: p.bool().default(false),
      },
      response: callUrl,
    },
    ({ user, realm, params }) => ({
      url: createBigBlueButtonCall(user, params.meeting_name ?? realm.name, params.voice_only),
    }),
  ),
});

defineRoute(callRoutes, '/calls/bigbluebutton/join', { GET: bigBlueButtonJoin });

defineRoute(callRoutes, '/calls/jitsi_meet/create', {
  POST: userEndpoint(
    { params: { is_video_call: p.bool().default(true) }, response: callUrl },
    ({ realm, params }) => ({ url: createJitsiCall(realm, params.is_video_call) }),
  ),
});

// Any other provider in the path: a clear 404 naming it, rather than "Endpoint does not exist".
defineRoute(callRoutes, '/calls/:provider/create', {
  POST: userEndpoint({ path: { provider: p.string() }, response: callUrl }, ({ path }) => {
    throw unknownCallProvider(path.provider);
  }),
});

/** Zoom's redirect back: a small page that closes itself, as Zulip's close_window.html. */
const CLOSE_WINDOW_PAGE = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Zoom connected</title></head>
<body><p>Your Zoom account is connected. You can close this window.</p>
<script>window.close();</script></body></html>
`;

const webhookBody = express.text({ type: () => true, limit: '64kb' });

const completeParams = { code: p.string(), state: p.string() };

/** The routes at the server's root (no /api/v1): what browsers open and Zoom calls. They are
 * left out of the OpenAPI description (which documents /api/v1) except where the same route
 * exists under /api/v1 too. */
export function callPageRoutes(): Router {
  const router = Router();
  router.use('/calls', resolveRealm);
  defineRoute(router, '/calls/zoom/register', { GET: zoomRegister });
  defineRoute(router, '/calls/bigbluebutton/join', { GET: bigBlueButtonJoin });
  defineRoute(router, '/calls/zoom/complete', {
    // Reached by the browser from Zoom's authorize page, at the root domain (the one redirect
    // URL registered with Zoom). As Zulip's complete_zoom_user, the request is sent on to the
    // host of the organization the state names, where it must carry the credentials of the
    // user who started the flow (the browser's Basic prompt, as at /calls/zoom/register).
    GET: async (req, res) => {
      await rateLimitIp(req, res);
      const { values } = parseParams(completeParams, {
        body: {},
        query: req.query as Record<string, unknown>,
      });
      // Signature checked before redirecting: the realm's URL is built from the state.
      const state = parseZoomState(values.state);
      const realm = await getZoomStateRealm(state);
      if (res.locals.realm?.id !== realm.id)
        return res.redirect(302, `${realmUrl(realm)}${req.originalUrl}`);
      const user = await authenticate(req, res);
      await rateLimitUser(req, res, user.id, 'api');
      await completeZoomAuthorization(user, state, values.code);
      res.status(200).type('html').send(CLOSE_WINDOW_PAGE);
    },
  });
  defineRoute(router, '/calls/zoom/deauthorize', {
    POST: async (req, res) => {
      await rateLimitIp(req, res);
      // Zoom's signature covers the exact bytes of the body: read as text, parsed below.
      await runMiddleware([webhookBody], req, res);
      const secret = getConfig().VIDEO_ZOOM_WEBHOOK_SECRET;
      // Without a secret, Zulip's answer: success, nothing done (an unsigned request could
      // come from anyone).
      if (!secret) return sendSuccess(res);
      const raw = typeof req.body === 'string' ? req.body : '';
      const signature = req.get('x-zm-signature');
      if (!verifyZoomWebhook(secret, signature, req.get('x-zm-request-timestamp'), raw))
        throw new UnauthorizedError('Invalid Zoom webhook signature');
      let body: { event?: unknown; payload?: Record<string, unknown> };
      try {
        body = JSON.parse(raw) as typeof body;
      } catch {
        throw new InvalidJSONError();
      }
      const payload = body.payload ?? {};
      // Zoom checks the URL when the webhook is saved, and every few days after.
      if (body.event === 'endpoint.url_validation' && typeof payload.plainToken === 'string')
        return void res.status(200).json(zoomUrlValidation(secret, payload.plainToken));
      if (body.event === 'app_deauthorized' && typeof payload.user_id === 'string') {
        const count = await deauthorizeZoomUser(payload.user_id);
        getLogger().info('Zoom app deauthorized', { tokens_forgotten: count });
      }
      sendSuccess(res);
    },
  });
  return router;
}
