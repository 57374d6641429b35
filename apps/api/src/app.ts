// Builds the API tier's Express app without listening (tests and the all-in-one server import
// it; main.ts listens).
import express, { Router } from 'express';
import { getConfig } from '@parley/config';
import { pingDatabase } from '@parley/db';
import { pingRedis } from '@parley/events';
import {
  bodyParsers,
  errorHandler,
  healthRoutes,
  notFound,
  onlyForItsPaths,
  requestContext,
} from '@parley/http';
import { resolveRealm } from '@parley/auth';
import { httpMetrics, metricsRouter } from '@parley/metrics';
import { registerApiMetrics } from './metrics';
import { alertWordRoutes } from './routes/alert-words';
import { authRoutes } from './routes/auth';
import { botStorageRoutes } from './routes/bot-storage';
import { botRoutes, botUploadRoutes } from './routes/bots';
import { callPageRoutes, callRoutes } from './routes/calls';
import { draftRoutes } from './routes/drafts';
import { emailChangePageRoutes } from './routes/email-change';
import { staticDataRoutes } from './routes/static-data';
import { flagRoutes } from './routes/flags';
import { inviteRoutes } from './routes/invites';
import { linkifierRoutes } from './routes/linkifiers';
import { messageRoutes } from './routes/messages';
import { mutedUserRoutes } from './routes/muted-users';
import { emojiImageRoutes, emojiUploadRoutes, realmEmojiRoutes } from './routes/realm-emoji';
import { avatarImageRoutes, avatarRoutes, avatarUploadRoutes } from './routes/avatars';
import { presenceRoutes } from './routes/presence';
import { userStatusRoutes } from './routes/user-status';
import { playgroundRoutes } from './routes/playgrounds';
import { channelFolderRoutes } from './routes/channel-folders';
import { navigationViewRoutes } from './routes/navigation-views';
import { realmDomainRoutes } from './routes/realm-domains';
import { exportTarballRoutes, realmExportRoutes } from './routes/realm-exports';
import { defaultStreamGroupRoutes } from './routes/default-stream-groups';
import { profileFieldRoutes } from './routes/profile-fields';
import { clientDeviceRoutes } from './routes/client-devices';
import { pushDeviceRoutes } from './routes/push-devices';
import { realmRoutes } from './routes/realm';
import { registerRoutes } from './routes/register';
import { savedSnippetRoutes } from './routes/saved-snippets';
import { scheduledMessageRoutes } from './routes/scheduled-messages';
import { serverRoutes } from './routes/server';
import { settingsRoutes } from './routes/settings';
import { streamRoutes } from './routes/streams';
import { subscriptionRoutes } from './routes/subscriptions';
import { typingRoutes } from './routes/typing';
import { userGroupRoutes } from './routes/user-groups';
import { userTopicRoutes } from './routes/user-topics';
import { tusRoutes } from './routes/tus';
import { uploadPostRoutes, servedUploadRoutes, uploadRoutes } from './routes/uploads';
import { userRoutes } from './routes/users';

export interface ApiAppOptions {
  /** Extra routers mounted under /api/v1 before the API's own (the all-in-one server mounts
   * the events tier's routes here). */
  mount?: Router[];
  isDraining?: () => boolean;
  /** /ready checks besides PostgreSQL and Redis (the all-in-one server adds the events
   * tier's). */
  readiness?: Record<string, () => Promise<boolean>>;
}

/** The /api/v1 routers, in the order they are tried: the upload endpoints, which parse their
 * own bodies after authentication (tus streams its own), then every resource's. */
export function apiRouters(): { uploads: Router[]; resources: Router[] } {
  return {
    uploads: [uploadPostRoutes, emojiUploadRoutes, avatarUploadRoutes, botUploadRoutes, tusRoutes],
    resources: [
      serverRoutes,
      authRoutes,
      // Before userRoutes: /users/me/apns_device_token is not a user's path.
      pushDeviceRoutes,
      clientDeviceRoutes,
      avatarRoutes,
      userRoutes,
      botRoutes,
      settingsRoutes,
      registerRoutes,
      // Before subscriptionRoutes: /users/me/subscriptions/muted_topics is not a channel id.
      userTopicRoutes,
      subscriptionRoutes,
      streamRoutes,
      channelFolderRoutes,
      flagRoutes,
      messageRoutes,
      linkifierRoutes,
      uploadRoutes,
      realmEmojiRoutes,
      typingRoutes,
      presenceRoutes,
      userStatusRoutes,
      playgroundRoutes,
      alertWordRoutes,
      mutedUserRoutes,
      botStorageRoutes,
      realmDomainRoutes,
      realmExportRoutes,
      defaultStreamGroupRoutes,
      realmRoutes,
      profileFieldRoutes,
      userGroupRoutes,
      inviteRoutes,
      draftRoutes,
      navigationViewRoutes,
      savedSnippetRoutes,
      scheduledMessageRoutes,
      callRoutes,
    ],
  };
}

/** The /api/v1 router: realm resolution, body parsing and every resource's routes. Each router
 * is entered only by the paths its routes begin with (the order still decides between two
 * that share one). */
export function apiRouter(): Router {
  const config = getConfig();
  const { uploads, resources } = apiRouters();
  const router = Router();
  router.use(resolveRealm);
  router.use(...uploads.map(onlyForItsPaths));
  router.use(bodyParsers(config.MAX_REQUEST_BODY_MIB * 1024 * 1024));
  router.use(...resources.map(onlyForItsPaths));
  return router;
}

export function createApp(options: ApiAppOptions = {}): express.Express {
  const config = getConfig();
  const app = express();
  app.disable('x-powered-by');
  // Zulip's API sends no ETags; computing one hashes every answer's body.
  app.set('etag', false);
  // Django's QueryDict semantics: flat keys, no `a[b]` nesting.
  app.set('query parser', 'simple');
  app.set('trust proxy', config.TRUST_PROXY);
  app.use(requestContext());
  app.use(httpMetrics());
  registerApiMetrics();
  app.use(onlyForItsPaths(metricsRouter()));
  app.use(
    onlyForItsPaths(
      healthRoutes(
        { postgres: pingDatabase, redis: pingRedis, ...options.readiness },
        options.isDraining ?? (() => false),
      ),
    ),
  );
  for (const router of options.mount ?? []) app.use('/api/v1', router);
  app.use('/api/v1', apiRouter());
  app.use(servedUploadRoutes(), emojiImageRoutes(), avatarImageRoutes(), exportTarballRoutes());
  // Video call pages browsers open and Zoom's redirect and webhook, outside /api/v1 as in
  // Zulip.
  app.use(callPageRoutes());
  // The link a new email address is sent (PATCH /settings), outside /api/v1 as in Zulip.
  app.use(emailChangePageRoutes());
  // The emoji names at /register's server_emoji_data_url.
  app.use(onlyForItsPaths(staticDataRoutes()));
  app.use(notFound);
  app.use(errorHandler);
  return app;
}
